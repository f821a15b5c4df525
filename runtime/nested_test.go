package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// TestNestedCallsRun runs a runbook of nested calls (docs/design/language.md v1.1) on
// the engine: each nested call is a step, and the value it stood for is
// its result when the call around it runs, an unnamed one's by its
// <verb>#<n> key.
func TestNestedCallsRun(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.echo :whole (t.echo :v "inner") :id (t.make-id :name $who :as @made) :as @outer)`, map[string]any{"who": "ada"})
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, rbtype.StepComplete, step(v, "t.echo#2").Status)
	require.JSONEq(t, `{"v":"inner"}`, string(v.Outcomes["t.echo#2"]))
	require.JSONEq(t, `{"whole":{"v":"inner"},"id":`+string(v.Outcomes["made"])+`}`, string(v.Outcomes["outer"]),
		"t.make-id has no returns:, so the value is its whole result")
}
