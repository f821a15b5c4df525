package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
)

// Conditions, failure hooks and for-each against PostgreSQL
// (docs/language.md, "The plan format"); machine_forms_test.go holds the
// state changes without a database.

// formsVerbs adds what these tests need to the test catalogue: a step
// that returns a list it is given, and a slow one that counts how many of
// its calls overlap.
const formsVerbs = `
- name: list
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
  output_schema:
    properties:
      items: {type: array, items: {type: object, properties: {name: {type: string}}}}
- name: slow
  domain: t
  execution:
    kind: sync
    handler: test.slow
    side_effects: external_call
    on_failure: isolate
  input_schema:
    properties:
      name: {type: string}
`

// overlap is a handler that takes a while and records how many of its
// calls ran at once; a name starting with "fail" fails.
type overlap struct {
	now, most atomic.Int32
	mu        sync.Mutex
	calls     []string
}

func (o *overlap) call(_ context.Context, c *runtime.Call) (runtime.Result, error) {
	n := o.now.Add(1)
	defer o.now.Add(-1)
	for {
		most := o.most.Load()
		if n <= most || o.most.CompareAndSwap(most, n) {
			break
		}
	}
	name, _ := c.Args["name"].(string)
	o.mu.Lock()
	o.calls = append(o.calls, name)
	o.mu.Unlock()
	time.Sleep(40 * time.Millisecond)
	if strings.HasPrefix(name, "fail") {
		return runtime.Result{}, runtime.Errorf(rbtype.CodeInvalidInput, "%s fails", name)
	}
	return runtime.Complete(map[string]any{"done": name}), nil
}

func setupForms(t *testing.T, opts ...option) (*testBundle, *overlap) {
	t.Helper()
	b := setup(t, opts...)
	o := &overlap{}
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.slow", Kind: rbtype.KindSync}, runtime.HandlerFunc(o.call)))
	b.extendCatalogue(t, formsVerbs)
	b.run(t)
	return b, o
}

// waitFinished waits until the runbook has finished (its compensations
// and hooks done).
func (b *testBundle) waitFinished(t *testing.T, id uuid.UUID) *apitype.RunbookView {
	t.Helper()
	return b.waitFor(t, id, "finished", func(v *apitype.RunbookView) bool { return v.FinishedAt != nil })
}

// A false condition skips its step and the steps that read it, and runs
// the steps that only follow it; a true one runs it. Neither is a
// failure.
func TestConditionsAgainstPostgres(t *testing.T) {
	b, _ := setupForms(t)
	src := `(t.echo :seconds $lag :as @lag)
		(t.count :cluster "db" :when (< @lag.seconds 5) :as @promote)
		(t.echo :n @promote.n :as @reads)
		(t.count :after @promote :as @follows)`
	skip := b.submit(t, src, map[string]any{"lag": 9})
	v := b.waitStatus(t, skip, rbtype.RunbookComplete)
	require.Equal(t, rbtype.StepSkipped, step(v, "promote").Status)
	require.Equal(t, rbtype.CodeConditionFalse, step(v, "promote").Error.Code)
	require.Equal(t, rbtype.StepSkipped, step(v, "reads").Status)
	require.Equal(t, rbtype.CodeUpstreamSkipped, step(v, "reads").Error.Code)
	require.Equal(t, rbtype.StepComplete, step(v, "follows").Status)
	require.Zero(t, b.rec.callsOf(skip, "promote"))
	require.Equal(t, 1, b.rec.callsOf(skip, "follows"))
	require.Contains(t, b.eventTypes(t, skip), "STEP_SKIPPED promote")

	run := b.submit(t, src, map[string]any{"lag": 2})
	v = b.waitStatus(t, run, rbtype.RunbookComplete)
	require.Equal(t, rbtype.StepComplete, step(v, "promote").Status)
	require.Equal(t, rbtype.StepComplete, step(v, "reads").Status)
	require.Equal(t, 1, b.rec.callsOf(run, "promote"))
}

// A failure runs the hook once, after the runbook has failed, with
// @failure filled; a reference to a step that did not complete is null.
// The runbook is finished only once the hook has ended.
func TestFailureHookRunsOnce(t *testing.T) {
	b, _ := setupForms(t)
	id := b.submit(t, `(t.echo :v 1 :as @ok) (t.fail :after @ok :as @broken)
		(on-failure (t.count :text (str "failed: " @failure.code " at " @failure.step) :status @failure.status
		   :ok @ok.v :broken @broken :as @notify))`, nil)
	v := b.waitFinished(t, id)
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.Equal(t, rbtype.StepComplete, step(v, "notify").Status)
	require.Equal(t, 1, b.rec.callsOf(id, "notify"), "the hook runs once")
	types := b.eventTypes(t, id)
	require.Contains(t, types, "HOOK_STARTED notify")
	require.Contains(t, types, "HOOK_SUCCEEDED notify")
	failedAt, hookAt := indexOf(types, "RUNBOOK_FAILED"), indexOf(types, "HOOK_STARTED notify")
	require.Less(t, failedAt, hookAt, "the hook runs after the runbook ended")

	args := resolvedArgs(t, b, id, "notify")
	require.Equal(t, map[string]any{"text": "failed: POLICY_DENIED at broken", "status": "failed", "ok": 1.0, "broken": nil}, args)
}

// A cancel at a gate compensates what completed, then runs the hook; a
// cancel that does not compensate runs the hook alone.
func TestCancelAtAGateCompensatesThenRunsHooks(t *testing.T) {
	b, _ := setupForms(t)
	src := `(t.reserve :what "writes" :as @pause) (t.approve :x 1 :after @pause :as @gate)
		(on-failure (t.count :status @failure.status :as @notify))`
	for _, compensate := range []bool{true, false} {
		id := b.submitNew(t, src, fmt.Sprint(compensate))
		b.waitState(t, id, "awaiting_approval")
		require.NoError(t, b.engine.CancelWith(b.ctx, id, runtime.CancelOptions{By: "ada", Compensate: compensate}))
		v := b.waitFinished(t, id)
		require.Equal(t, rbtype.RunbookCancelled, v.Status)
		require.Equal(t, rbtype.StepComplete, step(v, "notify").Status)
		require.Equal(t, 1, b.rec.callsOf(id, "notify"))
		types := b.eventTypes(t, id)
		if compensate {
			require.Less(t, indexOf(types, "COMPENSATION_SUCCEEDED pause"), indexOf(types, "HOOK_STARTED notify"))
			require.Equal(t, &apitype.Compensation{Status: rbtype.CompensationComplete}, step(v, "pause").Compensation)
		} else {
			require.NotContains(t, types, "COMPENSATION_STARTED pause")
			require.Nil(t, step(v, "pause").Compensation)
		}
		require.Equal(t, map[string]any{"status": "cancelled"}, resolvedArgs(t, b, id, "notify"))
	}
	b.rec.mu.Lock()
	require.Equal(t, []string{"writes"}, b.rec.undone, "undone once: by the cancel that compensates")
	b.rec.mu.Unlock()
}

// A list of three from a step's result expands to three iterations,
// which :parallel 1 runs one at a time, and whose results arrive as a
// list, in order, with null at the index of one that failed under
// isolate.
func TestForEachOverAStepsList(t *testing.T) {
	b, o := setupForms(t)
	id := b.submit(t, `(t.list :items $hosts :as @hosts)
		(for-each @hosts.items :as @h :parallel 1 (t.slow :name @h.name :as @each))
		(t.echo :all @each :as @after)`, map[string]any{"hosts": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "fail-b"}, map[string]any{"name": "c"}}})
	v := b.waitFinished(t, id)
	require.Equal(t, rbtype.RunbookFailed, v.Status, "an iteration failed under isolate")
	require.Equal(t, int32(1), o.most.Load(), ":parallel 1: never two at once")
	require.Equal(t, []string{"a", "fail-b", "c"}, o.calls)
	require.Equal(t, rbtype.StepComplete, step(v, "each").Status)
	require.Equal(t, rbtype.StepFailed, step(v, "each[1]").Status)
	var after map[string]any
	require.NoError(t, json.Unmarshal(v.Outcomes["after"], &after))
	require.Equal(t, []any{map[string]any{"done": "a"}, nil, map[string]any{"done": "c"}}, after["all"])
	types := b.eventTypes(t, id)
	require.Equal(t, 1, count(types, "MAP_EXPANDED"))
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Type == rbtype.EventMapExpanded {
			require.JSONEq(t, `{"loop":"h","count":3,"steps":3}`, string(e.Data))
		}
	}
}

// Without :parallel the iterations run at once; an empty list completes
// the template with [].
func TestForEachUnboundedAndEmpty(t *testing.T) {
	b, o := setupForms(t)
	src := `(t.list :items $hosts :as @hosts)
		(for-each @hosts.items :as @h (t.slow :name @h.name :as @each))
		(t.echo :all @each :as @after)`
	id := b.submit(t, src, map[string]any{"hosts": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c"}}})
	b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Greater(t, o.most.Load(), int32(1), "without :parallel, the elements overlap")

	empty := b.submit(t, src, map[string]any{"hosts": []any{}})
	v := b.waitStatus(t, empty, rbtype.RunbookComplete)
	require.JSONEq(t, `[]`, string(v.Outcomes["each"]))
	require.JSONEq(t, `{"all":[]}`, string(v.Outcomes["after"]))
}

// A list written out holds to its :parallel too: the compiler leaves it
// to the runtime, which runs its elements one at a time.
func TestForEachWrittenOutParallel(t *testing.T) {
	b, o := setupForms(t)
	id := b.submit(t, `(for-each [{:name "a"} {:name "b"} {:name "c"}] :as @h :parallel 1 (t.slow :name @h.name :as @each))
		(t.echo :all @each :as @after)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, int32(1), o.most.Load(), ":parallel 1: never two at once")
	require.Equal(t, []string{"a", "b", "c"}, o.calls)
	require.JSONEq(t, `{"all":[{"done":"a"},{"done":"b"},{"done":"c"}]}`, string(v.Outcomes["after"]))
	require.Equal(t, 1, count(b.eventTypes(t, id), "MAP_EXPANDED"))
}

// More elements than --max-fanout fail the list's producer with
// FANOUT_TOO_LARGE, the count in its message, and start nothing.
func TestForEachTooLarge(t *testing.T) {
	b, o := setupForms(t)
	hosts := make([]any, 1001)
	for i := range hosts {
		hosts[i] = map[string]any{"name": fmt.Sprint("h", i)}
	}
	id := b.submit(t, `(t.list :items $hosts :as @hosts)
		(for-each @hosts.items :as @h (t.slow :name @h.name :as @each))`, map[string]any{"hosts": hosts})
	v := b.waitFinished(t, id)
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.Equal(t, rbtype.CodeFanoutTooLarge, step(v, "hosts").Error.Code)
	require.Contains(t, step(v, "hosts").Error.Message, "holds 1001 elements, more than 1000")
	require.Equal(t, rbtype.StepSkipped, step(v, "each").Status)
	require.Len(t, v.Steps, 2, "nothing was expanded")
	require.Empty(t, o.calls)
	require.NotContains(t, b.eventTypes(t, id), "MAP_EXPANDED")

	// A list from an input is held to the bound at the door.
	_, err := b.engine.SubmitSource(b.ctx, "x.rbk", []byte(`(for-each $hosts :as @h (t.slow :name @h.name :as @each))`),
		runtime.Submission{Inputs: map[string]any{"hosts": hosts}})
	require.ErrorIs(t, err, rbtype.ErrInvalid)
	require.ErrorContains(t, err, "FANOUT_TOO_LARGE")
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// resolvedArgs reads the arguments a step was called with.
func resolvedArgs(t *testing.T, b *testBundle, id uuid.UUID, key string) map[string]any {
	t.Helper()
	var args map[string]any
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		data, err := tx.StepDataByKey(b.ctx, []driver.StepKey{{RunbookID: id, Key: key}})
		if err != nil {
			return err
		}
		d, ok := data[driver.StepKey{RunbookID: id, Key: key}]
		require.True(t, ok, "no step %q", key)
		return json.Unmarshal(d.ResolvedArgs, &args)
	}))
	return args
}

// submitNew submits a source under an idempotency key of its own, so the
// same source runs again as a new runbook.
func (b *testBundle) submitNew(t *testing.T, source, key string) uuid.UUID {
	t.Helper()
	sub, err := b.engine.SubmitSource(b.ctx, "test.rbk", []byte(source), runtime.Submission{Actor: "test", IdempotencyKey: key})
	require.NoError(t, err)
	return sub.ID
}
