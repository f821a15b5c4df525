// Package lsp is rbc's language server: `rbc lsp` speaks the Language
// Server Protocol over standard input and output, so that any editor shows
// the diagnostics `rbc lint` would print, as the runbook is typed, and
// offers completion, hover, go to definition, document symbols, formatting
// and rename of a binding.
//
// The protocol's types and its JSON-RPC transport come from
// go.lsp.dev/protocol and go.lsp.dev/jsonrpc2; this package only decides
// what each request answers. Every answer is computed from the same
// passes the command line runs (lang.Parse, compiler.Compile, the verb
// loader), so an editor and `rbc lint` never disagree.
//
// Requests are handled one at a time, in the order they arrive, on the
// connection's reading goroutine: a change is always analysed before the
// requests that follow it, and the server's state needs no lock.
package lsp
