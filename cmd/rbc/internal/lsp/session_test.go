package lsp

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/runbookdev/runbook/cmd/rbc/internal/lsp/lsptest"
)

// startServer runs a server in process on an in-memory pipe, initialized
// with root as its workspace, and shuts it down when the test ends.
func startServer(tb testing.TB, ctx context.Context, opts Options, root string) *lsptest.Client {
	tb.Helper()
	serverSide, clientSide := duplex()
	done := make(chan error, 1)
	// Both ends outlive the test's context, for the shutdown at cleanup.
	go func() { done <- Serve(context.Background(), serverSide, opts) }()
	client := lsptest.New(context.Background(), clientSide)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(tb, client.Call(ctx, protocol.MethodShutdown, nil, nil))
		require.NoError(tb, client.Notify(ctx, protocol.MethodExit, nil))
		require.NoError(tb, <-done)
		_ = client.Close()
	})
	params := &protocol.InitializeParams{}
	if root != "" {
		params.RootURI = uri.File(root)
	}
	require.NoError(tb, client.Call(ctx, protocol.MethodInitialize, params, nil))
	require.NoError(tb, client.Notify(ctx, protocol.MethodInitialized, &protocol.InitializedParams{}))
	return client
}

// startWithVerbs starts a server whose catalogue is one verb file holding
// def, in a new directory, and returns the directory for the runbooks.
func startWithVerbs(t *testing.T, ctx context.Context, def string) (*lsptest.Client, string) {
	t.Helper()
	dir := t.TempDir()
	verbs := filepath.Join(dir, "v.yaml")
	require.NoError(t, os.WriteFile(verbs, []byte(def), 0o644))
	return startServer(t, ctx, Options{Verbs: []string{verbs}}, ""), dir
}

// openDoc opens a runbook and returns its first diagnostics.
func openDoc(tb testing.TB, ctx context.Context, client *lsptest.Client, doc protocol.DocumentURI, text string) protocol.PublishDiagnosticsParams {
	tb.Helper()
	require.NoError(tb, client.Notify(ctx, protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
		TextDocument: protocol.TextDocumentItem{URI: doc, LanguageID: "runbook", Version: 1, Text: text},
	}))
	diags, err := client.Diagnostics(ctx, doc)
	require.NoError(tb, err)
	return diags
}

// duplex is two ends of an in-memory connection.
func duplex() (io.ReadWriteCloser, io.ReadWriteCloser) {
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	return pipeEnd{r1, w2}, pipeEnd{r2, w1}
}

type pipeEnd struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p pipeEnd) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeEnd) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeEnd) Close() error {
	p.r.Close()
	return p.w.Close()
}
