package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
)

// TestHandlerResultWithNULFailsTheStep: a result from the outside world
// (an HTTP response, say) may hold a NUL character, which jsonb cannot
// store. The step fails with a code, rather than the advance that would
// write the result failing again and again.
func TestHandlerResultWithNULFailsTheStep(t *testing.T) {
	b := setup(t)
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.nul", Kind: rbtype.KindSync}, handler.HandlerFunc(
		func(context.Context, *handler.Call) (handler.Result, error) {
			return handler.Complete(map[string]any{"v": "a\x00b", `\u0000`: "a key that only looks like one"}), nil
		})))
	b.extendCatalogue(t, `
- name: nul
  domain: t
  execution: {kind: sync, handler: test.nul, side_effects: none}
`)
	b.run(t)
	id := b.submit(t, `(t.nul)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, rbtype.CodeInternal, v.Steps[0].Error.Code)
	require.Contains(t, v.Steps[0].Error.Message, "NUL")
}
