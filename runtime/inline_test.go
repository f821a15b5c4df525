package runtime_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// pureVerbs declares core.echo pure, which lets its steps run inside the
// advance that starts them (docs/runtime.md: inline steps).
const pureVerbs = `
- name: pure
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none, determinism: pure}
`

// A chain of pure steps, then a step with an effect, then a pure one: the
// pure steps are called inside the advances, each recorded as a leased
// call would be (its events, its ledger row, this worker's id), and the
// results flow through them as through leased calls.
func TestPureStepsRunInsideTheAdvance(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics := runtime.NewMetrics(reg) // once: extendCatalogue makes the engine again
	b := setup(t, func(c *runtime.Config) { c.Metrics = metrics })
	b.extendCatalogue(t, pureVerbs)
	b.run(t)
	id := b.submit(t, `(t.pure :v $who :as @a) (t.pure :v @a.v :as @b) (t.count :after @b :as @c) (t.pure :v @b.v :after @c :as @d)`,
		map[string]any{"who": "ada"})
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.JSONEq(t, `{"v":"ada"}`, string(v.Outcomes["d"]))
	require.Equal(t, 1, b.rec.callsOf(id, "c"))
	require.Equal(t, 3.0, metric(t, reg, "rbd_steps_inline_total"), "a, b and d ran inline; c, which counts, was leased")
	require.Equal(t, int64(4), v.Cost.Attempts, "every attempt has its ledger row")

	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	var got []string
	for _, e := range events {
		if e.StepKey != "" {
			got = append(got, string(e.Type)+" "+e.StepKey)
			require.Equal(t, b.engine.WorkerID(), e.WorkerID)
		}
	}
	// c, which has an effect, starts in the next transaction, which looks
	// its receipt up first (machine's receipt_lookup.go).
	require.Equal(t, []string{
		"STEP_STARTED a", "STEP_SUCCEEDED a", "STEP_STARTED b", "STEP_SUCCEEDED b", "STEP_READY c", "STEP_STARTED c",
		"STEP_SUCCEEDED c", "STEP_STARTED d", "STEP_SUCCEEDED d",
	}, got)
}
