package lsp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/runbookdev/runbook/cmd/rbc/internal/lsp/lsptest"
	"github.com/runbookdev/runbook/examples/runbooks/synthetic"
)

// BenchmarkDiagnosticsAfterChange measures what an editor waits for after
// each keystroke in a 1,000-step runbook: from sending didChange with the
// whole text to receiving its diagnostics, through the JSON-RPC stream
// (encoding, framing, decoding on both sides), parsing, compiling against
// the catalogue and converting the diagnostics. The target is 100 ms
// (BENCHMARKS.md). The change alternates a clean text with one holding an
// unknown argument, so that every round trip analyses and publishes.
func BenchmarkDiagnosticsAfterChange(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			ctx := context.Background()
			client, doc, base := benchSession(b, ctx, n)
			clean := string(synthetic.Runbook(n))
			broken := clean + "(bench.step :input 1 :nope 2)\n"
			version := int32(1)
			for b.Loop() {
				version++
				text, want := clean, base
				if version%2 == 0 {
					text, want = broken, base+1
				}
				require.NoError(b, client.Notify(ctx, protocol.MethodTextDocumentDidChange, &protocol.DidChangeTextDocumentParams{
					TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: doc}, Version: version},
					ContentChanges: []protocol.TextDocumentContentChangeEvent{{Text: text}},
				}))
				diags, err := client.Diagnostics(ctx, doc)
				require.NoError(b, err)
				require.Len(b, diags.Diagnostics, want)
			}
		})
	}
}

// benchSession starts a server in process with the synthetic catalogue,
// and opens an n-step runbook in it. base is how many diagnostics the
// runbook has: a warning that its last binding is unused.
func benchSession(b *testing.B, ctx context.Context, n int) (client *lsptest.Client, doc protocol.DocumentURI, base int) {
	dir := b.TempDir()
	verbs := filepath.Join(dir, "bench.yaml")
	require.NoError(b, os.WriteFile(verbs, []byte(synthetic.Verbs), 0o644))
	client = startServer(b, ctx, Options{Verbs: []string{verbs}}, "")
	doc = uri.File(filepath.Join(dir, "bench.rbk"))
	diags := openDoc(b, ctx, client, doc, string(synthetic.Runbook(n)))
	for _, d := range diags.Diagnostics {
		require.Equal(b, "W001", d.Code)
	}
	return client, doc, len(diags.Diagnostics)
}
