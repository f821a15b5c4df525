package lsp

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// Three catalogues, each defining one verb, tell which one the server
// read: --verbs wins, then the workspace's runbook.yaml, then RBC_VERBS.
func TestCatalogueIsFoundAsDocumented(t *testing.T) {
	root := t.TempDir()
	for _, dom := range []string{"flag", "ws", "env"} {
		dir := filepath.Join(root, dom)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		def := "- name: go\n  domain: " + dom + "\n  execution: {kind: sync, handler: core.echo, side_effects: none}\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "v.yaml"), []byte(def), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, WorkspaceFile), []byte("verbs: [ws]\n"), 0o644))
	noFile := t.TempDir()

	for _, tc := range []struct {
		name string
		opts Options
		root string
		want string
	}{
		{"flag", Options{Verbs: []string{filepath.Join(root, "flag")}, EnvVerbs: []string{filepath.Join(root, "env")}}, root, "flag.go"},
		{"workspace file", Options{EnvVerbs: []string{filepath.Join(root, "env")}}, root, "ws.go"},
		{"environment", Options{EnvVerbs: []string{filepath.Join(root, "env")}}, noFile, "env.go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			client := startServer(t, ctx, tc.opts, tc.root)
			doc := uri.File(filepath.Join(tc.root, "a.rbk"))
			diags := openDoc(t, ctx, client, doc, "(flag.go) (ws.go) (env.go)")
			var unknown []string
			for _, d := range diags.Diagnostics {
				require.Equal(t, "E010", d.Code)
				unknown = append(unknown, d.Message)
			}
			require.Len(t, unknown, 2)
			require.NotContains(t, unknown, `unknown verb "`+tc.want+`"`)
		})
	}
}

func TestWithoutACatalogueOnlySyntaxIsChecked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := startServer(t, ctx, Options{}, t.TempDir())
	doc := uri.File(filepath.Join(t.TempDir(), "a.rbk"))
	diags := openDoc(t, ctx, client, doc, "(any.verb :x 1) (oops")
	require.Len(t, diags.Diagnostics, 1)
	require.Equal(t, "E001", diags.Diagnostics[0].Code)
	msgs := client.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, protocol.MessageTypeWarning, msgs[0].Type)
	require.Contains(t, msgs[0].Message, "no verb catalogue")
}

// Changes on disk the editor reports are followed: a verb file edited by
// another program is checked again, and a new runbook.yaml names
// another catalogue.
func TestWatchedFilesReloadTheCatalogue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := t.TempDir()
	for _, dom := range []string{"one", "two"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, dom), 0o755))
		def := "- name: go\n  domain: " + dom + "\n  execution: {kind: sync, handler: core.echo, side_effects: none}\n"
		require.NoError(t, os.WriteFile(filepath.Join(root, dom, "v.yaml"), []byte(def), 0o644))
	}
	wsFile := filepath.Join(root, WorkspaceFile)
	require.NoError(t, os.WriteFile(wsFile, []byte("verbs: [one]\n"), 0o644))
	client := startServer(t, ctx, Options{}, root)
	doc := uri.File(filepath.Join(root, "a.rbk"))
	require.Equal(t, []string{`unknown verb "two.go"`}, messages(openDoc(t, ctx, client, doc, "(one.go) (two.go)")))

	changed := func(path string) {
		require.NoError(t, client.Notify(ctx, protocol.MethodWorkspaceDidChangeWatchedFiles, &protocol.DidChangeWatchedFilesParams{
			Changes: []*protocol.FileEvent{{Type: protocol.FileChangeTypeChanged, URI: uri.File(path)}},
		}))
	}
	verbFile := filepath.Join(root, "one", "v.yaml")
	require.NoError(t, os.WriteFile(verbFile, []byte("- name: go\n  domain: one\n  executon: {}\n"), 0o644))
	changed(verbFile)
	diags, err := client.Diagnostics(ctx, uri.File(verbFile))
	require.NoError(t, err)
	require.NotEmpty(t, diags.Diagnostics)
	diags, err = client.Diagnostics(ctx, doc)
	require.NoError(t, err)
	require.Equal(t, []string{`unknown verb "one.go"`, `unknown verb "two.go"`}, messages(diags))

	require.NoError(t, os.WriteFile(wsFile, []byte("verbs: [two]\n"), 0o644))
	changed(wsFile)
	diags, err = client.Diagnostics(ctx, uri.File(verbFile))
	require.NoError(t, err)
	require.Empty(t, diags.Diagnostics, "one/ is no longer the catalogue: its problems are cleared")
	diags, err = client.Diagnostics(ctx, doc)
	require.NoError(t, err)
	require.Equal(t, []string{`unknown verb "one.go"`}, messages(diags))
}

func messages(p protocol.PublishDiagnosticsParams) []string {
	var out []string
	for _, d := range p.Diagnostics {
		out = append(out, d.Message)
	}
	return out
}
