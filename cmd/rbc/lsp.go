package main

import (
	"context"
	"io"
	"os"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/cmd/rbc/internal/lsp"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/registry"
)

// runLsp serves the Language Server Protocol on standard input and
// output (docs/language.md, "Editor support"). The catalogue is --verbs,
// else the workspace's runbook.yaml, else RBC_VERBS.
func runLsp(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("lsp", stderr)
	var flagged cli.ListFlag
	fs.Var(&flagged, "verbs", "directory or file of verb definitions (repeatable)")
	// Editors start servers with --stdio; it is the only transport.
	fs.Bool("stdio", true, "talk LSP on standard input and output (the only transport)")
	rest, err := fs.Parse(args)
	if err != nil {
		return parseFailed(err, stderr)
	}
	if len(rest) > 0 {
		_ = fs.UsageErrorf("lsp takes no FILE arguments, got %d", len(rest))
		return exitCantRun
	}
	opts := lsp.Options{Verbs: flagged, EnvVerbs: envVerbPaths(), Version: version(), FixAll: fixAll}
	if err := lsp.Serve(context.Background(), stdio{}, opts); err != nil {
		return cantRun(stderr, "lsp: %v", err)
	}
	return exitOK
}

// stdio is standard input and output as one stream.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

// fixAll is rbc fix's repair of one source, for the language server's
// "fix all" action.
func fixAll(cat *registry.Catalogue, name string, src []byte) []byte {
	fixed, _, _ := fixSource(compiler.Options{}, cat, name, src)
	return fixed
}
