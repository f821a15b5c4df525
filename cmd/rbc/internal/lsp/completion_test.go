package lsp

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/runbookdev/runbook/cmd/rbc/internal/lsp/lsptest"
)

// After a keyword whose values are few, completion offers them as
// literals, before the bindings and inputs that could stand there too.
func TestCompletionOffersTheValuesAKeywordAdmits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	def := `- name: page
  domain: ops
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      severity: {type: string, enum: [sev1, "<sev2>"]}
      loud: {type: boolean}
`
	client, dir := startWithVerbs(t, ctx, def)
	doc := uri.File(filepath.Join(dir, "t.rbk"))
	text := "(ops.page :severity $sev :as @p)\n(ops.page :severity  :loud  :gate  :on-failure  :after @p)"
	openDoc(t, ctx, client, doc, text)
	tx := newText(text)

	second := strings.IndexByte(text, '\n') + 1
	labels := func(after string) []string {
		off := second + strings.Index(text[second:], after) + len(after)
		return completionLabels(t, ctx, client, doc, tx.position(off))
	}
	require.Equal(t, []string{`"sev1"`, `"<sev2>"`, "@p", "$sev"}, labels(":severity "))
	require.Equal(t, []string{"true", "false", "@p", "$sev"}, labels(":loud "))
	require.Equal(t, []string{`"none"`, `"human_confirm"`, "@p", "$sev"}, labels(":gate "))
	require.Equal(t, []string{`"abort"`, `"isolate"`, `"continue"`, "@p", "$sev"}, labels(":on-failure "))
}

// completionLabels asks for completion at pos and returns the labels
// offered, in order.
func completionLabels(t *testing.T, ctx context.Context, client *lsptest.Client, doc protocol.DocumentURI, pos protocol.Position) []string {
	t.Helper()
	var list protocol.CompletionList
	require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{
		TextDocumentPositionParams: params(doc, pos),
	}, &list))
	var out []string
	for _, it := range list.Items {
		out = append(out, it.Label)
	}
	return out
}
