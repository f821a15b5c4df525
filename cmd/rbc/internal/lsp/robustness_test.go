package lsp

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// Every request at every position of texts an editor really holds while
// typing (unclosed calls, strings and brackets, a lone '@', non-ASCII)
// gets an answer, and the completion edits stay inside the text.
func TestEveryPositionGetsAnAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	def := `- name: go
  domain: a
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    required: [x]
    properties: {x: {type: integer}, m: {type: object}}
  output_schema:
    properties: {out: {type: array, items: {type: object, properties: {u: {type: string}}}}}
`
	client, dir := startWithVerbs(t, ctx, def)
	texts := []string{
		"(a.go :x 1 :as @p) ;; é 😀 (\n(a.go :x @p.out[0]. :m {:as @q} :as @r\n(a.go :x @ $",
		"(a.go :x \"unterminated ( 😀\n(a.",
		"]]} ) (a.go :x [1 {:k @p.} 2 :as @p)",
		"",
	}
	items, hovers := 0, 0
	for n, text := range texts {
		doc := uri.File(filepath.Join(dir, "t.rbk"))
		if n == 0 {
			openDoc(t, ctx, client, doc, text)
		} else {
			require.NoError(t, client.Notify(ctx, protocol.MethodTextDocumentDidChange, &protocol.DidChangeTextDocumentParams{
				TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: doc}, Version: int32(n + 1)},
				ContentChanges: []protocol.TextDocumentContentChangeEvent{{Text: text}},
			}))
			_, err := client.Diagnostics(ctx, doc)
			require.NoError(t, err)
		}
		tx := newText(text)
		end := tx.position(len(text))
		for off := 0; off <= len(text); off++ {
			pos := params(doc, tx.position(off))
			var list protocol.CompletionList
			require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{TextDocumentPositionParams: pos}, &list))
			items += len(list.Items)
			for _, it := range list.Items {
				r := it.TextEdit.Range
				require.False(t, after(r.Start, r.End) || after(r.End, end), "%q at %d: %s edits %v", text, off, it.Label, r)
			}
			var hover *protocol.Hover
			require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: pos}, &hover))
			if hover != nil {
				hovers++
			}
			var locs []protocol.Location
			require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: pos}, &locs))
			var actions []protocol.CodeAction
			require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
				TextDocument: pos.TextDocument, Range: protocol.Range{Start: pos.Position, End: pos.Position},
			}, &actions))
			var symbols []protocol.DocumentSymbol
			require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: pos.TextDocument}, &symbols))
		}
	}
	// The texts do offer completions and hovers somewhere.
	require.Positive(t, items)
	require.Positive(t, hovers)
}

func params(doc protocol.DocumentURI, pos protocol.Position) protocol.TextDocumentPositionParams {
	return protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: doc}, Position: pos}
}

// after reports whether a comes after b.
func after(a, b protocol.Position) bool {
	return a.Line > b.Line || a.Line == b.Line && a.Character > b.Character
}
