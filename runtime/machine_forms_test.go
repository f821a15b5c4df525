package runtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

func driverEdge(from, to, kind string) driver.Edge {
	return driver.Edge{From: from, To: to, Kind: kind}
}

// The state changes of conditions, failure hooks and for-each
// (docs/language.md, "The plan format"), without a database.

const conditionSource = `(m.echo :v $lag :as @lag)
	(m.send :to "db" :when (< @lag.v 5) :as @promote)
	(m.echo :v @promote.sent :as @reads)
	(m.echo :v 1 :after @promote :as @follows)`

// pending → skipped (CONDITION_FALSE): a false condition is decided in the
// advance that completes what it reads, with no call; a step that reads
// the skipped one is skipped (UPSTREAM_SKIPPED), one that only runs after
// it runs, and the runbook completes: a skip is not a failure.
func TestMachineConditionFalseSkips(t *testing.T) {
	f := newFixture(t, conditionSource, map[string]any{"lag": 9})
	_, calls := f.advance()
	w, calls := f.advance(succeed(callFor(t, calls, "lag"), map[string]any{"v": 9}))
	require.Empty(t, calls, "promote is never called")
	require.Equal(t, []string{"STEP_SUCCEEDED lag", "STEP_SKIPPED promote", "STEP_SKIPPED reads", "STEP_READY follows"}, eventNames(w.Events))
	require.Equal(t, machine.StepSkippedData{Reason: rbtype.CodeConditionFalse}, eventData[machine.StepSkippedData](t, w.Events, "STEP_SKIPPED promote"))
	require.Equal(t, machine.StepSkippedData{Because: "promote", Status: rbtype.StepSkipped, Reason: rbtype.CodeUpstreamSkipped},
		eventData[machine.StepSkippedData](t, w.Events, "STEP_SKIPPED reads"))
	require.Equal(t, rbtype.CodeConditionFalse, f.step("promote").ErrorCode)
	require.Equal(t, rbtype.CodeUpstreamSkipped, f.step("reads").ErrorCode)
	require.Equal(t, f.now, *f.rb.WakeAt, "follows is ready: due at once")

	_, calls = f.advance()
	w, _ = f.advance(succeed(callFor(t, calls, "follows"), map[string]any{"v": 1}))
	require.Equal(t, []string{"STEP_SUCCEEDED follows", "RUNBOOK_COMPLETED"}, eventNames(w.Events))
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
}

// A true condition lets its step run, in the same advance that decided it.
func TestMachineConditionTrueRuns(t *testing.T) {
	f := newFixture(t, conditionSource, map[string]any{"lag": 3})
	_, calls := f.advance()
	w, calls := f.advance(succeed(callFor(t, calls, "lag"), map[string]any{"v": 3}))
	require.Equal(t, []string{"STEP_SUCCEEDED lag", "STEP_STARTED promote"}, eventNames(w.Events))
	require.Equal(t, map[string]any{"to": "db"}, callFor(t, calls, "promote").Call.Args)

}

// A condition whose operand has the wrong type at run time fails its step
// (SCHEMA_VALIDATION_FAILED) as an argument would, and one that reads a
// missing path fails it MISSING_REQUIRED_CONTEXT; exists never fails.
func TestMachineConditionErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result any
		code   rbtype.ErrorCode
	}{
		{"text ordered", map[string]any{"v": "high"}, rbtype.CodeSchemaValidationFailed},
		{"missing path", map[string]any{"w": 1}, rbtype.CodeMissingRequiredContext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, conditionSource, map[string]any{"lag": 1})
			_, calls := f.advance()
			w, _ := f.advance(succeed(callFor(t, calls, "lag"), tc.result))
			require.Equal(t, tc.code, eventData[machine.StepFailedData](t, w.Events, "STEP_FAILED promote").Code)
			require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
		})
	}
	f := newFixture(t, `(m.echo :v 1 :as @a) (m.send :to "x" :when (not (exists @a.missing)) :as @b)`, nil)
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": 1}))
	require.NotNil(t, callFor(t, calls, "b"), "a missing path does not exist")
}

// A gated step whose condition is false never asks for approval; one
// whose condition is true asks before it runs.
func TestMachineConditionBeforeTheGate(t *testing.T) {
	for _, lag := range []int{9, 1} {
		f := newFixture(t, `(m.echo :v $lag :as @lag) (m.approve :x 1 :when (< @lag.v 5) :as @promote)`, map[string]any{"lag": lag})
		_, calls := f.advance()
		w, _ := f.advance(succeed(callFor(t, calls, "lag"), map[string]any{"v": lag}))
		if lag == 9 {
			require.Equal(t, []string{"STEP_SUCCEEDED lag", "STEP_SKIPPED promote", "RUNBOOK_COMPLETED"}, eventNames(w.Events))
			continue
		}
		require.Equal(t, []string{"STEP_SUCCEEDED lag", "STEP_READY promote", "GATE_REQUESTED promote"}, eventNames(w.Events))
		require.Equal(t, rbtype.StepWaitingApproval, f.step("promote").Status)
	}
}

const hookSource = `(m.send :to "x" :as @s) (m.echo :v 1 :as @ok)
	(on-failure
	  (m.send :to (str "failed: " @failure.code " at " @failure.step " (" @failure.status ")") :ok @ok.v :s @s.sent :as @notify)
	  (m.echo :v 2 :when (= @failure.status "cancelled") :as @only-on-cancel))`

// A failure runs the hooks once, after the runbook has ended, as ordinary
// leased steps with HOOK_* events; @failure says what failed, and a
// reference to a step that did not complete is null. The runbook is
// finished only once its hooks have ended.
func TestMachineFailureHooks(t *testing.T) {
	f := newFixture(t, hookSource, nil)
	w, calls := f.advance()
	require.Equal(t, []string{"ok", "s"}, f.leasedKeys(w), "hooks do not run while the runbook runs")
	w, calls = f.advance(failWith(callFor(t, calls, "s"), rbtype.CodeInvalidInput), succeed(callFor(t, calls, "ok"), map[string]any{"v": 1}))
	require.Equal(t, []string{"STEP_FAILED s", "STEP_SUCCEEDED ok", "RUNBOOK_FAILED"}, eventNames(w.Events))
	require.Empty(t, calls)
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Nil(t, f.rb.FinishedAt, "not finished: its hooks are still to run")
	require.Equal(t, f.now, *f.rb.WakeAt)

	w, calls = f.advance()
	require.Equal(t, []string{"ok"}, f.fetched, "what the hook reads of a completed step is read")
	require.Equal(t, []string{"STEP_SKIPPED only-on-cancel", "HOOK_STARTED notify"}, eventNames(w.Events))
	notify := callFor(t, calls, "notify")
	require.Equal(t, map[string]any{"to": "failed: INVALID_INPUT at s (failed)", "ok": json.Number("1"), "s": nil}, notify.Call.Args)
	require.NotEmpty(t, notify.Call.IdempotencyKey)
	require.Nil(t, f.rb.FinishedAt)

	// Its worker dies: the hook is reclaimed and called again with the
	// same key, not cancelled as a step of an aborted runbook would be.
	f.now = f.now.Add(time.Minute)
	w, calls = f.advance()
	require.Equal(t, []string{"STEP_RECLAIMED notify", "HOOK_STARTED notify"}, eventNames(w.Events))
	again := callFor(t, calls, "notify")
	require.Equal(t, notify.Call.IdempotencyKey, again.Call.IdempotencyKey)
	require.Equal(t, 2, again.Attempt)

	w, calls = f.advance(succeed(again, map[string]any{"sent": true}))
	require.Equal(t, []string{"HOOK_SUCCEEDED notify"}, eventNames(w.Events))
	require.Len(t, w.Receipts, 1, "a hook leaves its receipt like any step")
	require.Empty(t, calls)
	require.NotNil(t, f.rb.FinishedAt, "finished once the hooks have ended")
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Nil(t, f.rb.WakeAt)
	w, _ = f.advance()
	require.Empty(t, w.Events, "a hook runs once")
}

// A hook that fails is recorded (HOOK_FAILED) and triggers nothing: the
// other hooks run, nothing is compensated, and the runbook finishes.
func TestMachineFailedHookTriggersNothing(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s)
		(on-failure (m.send-once :to "a" :as @h1) (m.echo :v 1 :as @h2))`, nil)
	_, calls := f.advance()
	f.advance(failWith(callFor(t, calls, "s"), rbtype.CodeInvalidInput))
	_, calls = f.advance()
	w, _ := f.advance(failWith(callFor(t, calls, "h1"), rbtype.CodeInternal), succeed(callFor(t, calls, "h2"), map[string]any{"v": 1}))
	require.Equal(t, []string{"HOOK_FAILED h1", "HOOK_SUCCEEDED h2"}, eventNames(w.Events))
	require.NotNil(t, f.rb.FinishedAt)
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
}

// A runbook that completes never runs its hooks: they are skipped with
// NO_FAILURE as it completes.
func TestMachineHooksOfACompletedRunbook(t *testing.T) {
	f := newFixture(t, hookSource, nil)
	_, calls := f.advance()
	w, _ := f.advance(succeed(callFor(t, calls, "s"), map[string]any{"sent": true}), succeed(callFor(t, calls, "ok"), map[string]any{"v": 1}))
	require.Equal(t, []string{"STEP_SUCCEEDED s", "STEP_SUCCEEDED ok", "STEP_SKIPPED notify", "STEP_SKIPPED only-on-cancel", "RUNBOOK_COMPLETED"},
		eventNames(w.Events))
	require.Equal(t, rbtype.CodeNoFailure, f.step("notify").ErrorCode)
	require.NotNil(t, f.rb.FinishedAt)
}

// Compensations run first, newest first, then the hooks; the runbook is
// finished when both are done.
func TestMachineHooksRunAfterCompensations(t *testing.T) {
	f := newFixture(t, `(m.reserve :what "db" :as @r) (m.send :to "x" :after @r :as @s)
		(on-failure (m.echo :v @failure.step :as @h))`, nil)
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "r"), map[string]any{"ok": true}))
	f.advance(failWith(callFor(t, calls, "s"), rbtype.CodeInvalidInput))
	w, calls := f.advance()
	require.Equal(t, []string{"COMPENSATION_STARTED r"}, eventNames(w.Events))
	w, calls = f.advance(succeed(callFor(t, calls, "r"), map[string]any{"undone": true}))
	require.Equal(t, []string{"COMPENSATION_SUCCEEDED r", "HOOK_STARTED h"}, eventNames(w.Events))
	require.Equal(t, map[string]any{"v": "s"}, callFor(t, calls, "h").Call.Args)
	require.Nil(t, f.rb.FinishedAt)
	f.advance(succeed(callFor(t, calls, "h"), map[string]any{"v": "s"}))
	require.NotNil(t, f.rb.FinishedAt)
}

// A hook with a gate waits for its approval like any step.
func TestMachineHookGate(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s) (on-failure (m.approve :what @failure.code :as @h))`, nil)
	_, calls := f.advance()
	f.advance(failWith(callFor(t, calls, "s"), rbtype.CodeInvalidInput))
	w, _ := f.advance()
	require.Equal(t, []string{"STEP_READY h", "GATE_REQUESTED h"}, eventNames(w.Events))
	require.Nil(t, f.rb.WakeAt, "only a person moves it now")
	_, calls, err := f.command(&machine.DecideGate{Step: "h", Approve: true, By: "ada"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"what": "INVALID_INPUT"}, callFor(t, calls, "h").Call.Args)
}

// A cancel at a gate compensates what completed, newest first, then runs
// the hooks with @failure.status cancelled; without compensation it runs
// the hooks at once.
func TestMachineCancelRunsCompensationsThenHooks(t *testing.T) {
	src := `(m.reserve :what "db" :as @r) (m.approve :x 1 :after @r :as @gate)
		(on-failure (m.echo :v (str @failure.status " " @failure.code) :as @h))`
	for _, compensate := range []bool{true, false} {
		f := newFixture(t, src, nil)
		_, calls := f.advance()
		f.advance(succeed(callFor(t, calls, "r"), map[string]any{"ok": true}))
		require.Equal(t, rbtype.StepWaitingApproval, f.step("gate").Status)
		w, calls, err := f.command(&machine.CancelRunbook{By: "ada", Compensate: compensate})
		require.NoError(t, err)
		require.Nil(t, f.rb.FinishedAt)
		if compensate {
			require.Equal(t, []string{"STEP_CANCELLED gate", "RUNBOOK_CANCELLED"}, eventNames(w.Events))
			require.Empty(t, calls)
			w, calls = f.advance()
			require.Equal(t, []string{"COMPENSATION_STARTED r"}, eventNames(w.Events))
			w, calls = f.advance(succeed(callFor(t, calls, "r"), map[string]any{"undone": true}))
			require.Equal(t, []string{"COMPENSATION_SUCCEEDED r", "HOOK_STARTED h"}, eventNames(w.Events))
		} else {
			require.Equal(t, []string{"STEP_CANCELLED gate", "RUNBOOK_CANCELLED", "HOOK_STARTED h"}, eventNames(w.Events),
				"nothing to undo: the hooks start in the cancel's own transaction")
			require.Equal(t, rbtype.CompensationNone, f.step("r").CompensationStatus)
		}
		require.Equal(t, map[string]any{"v": "cancelled CANCELLED"}, callFor(t, calls, "h").Call.Args)
		f.advance(succeed(callFor(t, calls, "h"), map[string]any{"v": 1}))
		require.NotNil(t, f.rb.FinishedAt)
		require.Equal(t, rbtype.RunbookCancelled, f.rb.Status)
	}
}

// A runbook whose hooks run cannot be retried until they are done; the
// hooks of a retried runbook that ran stay as they ended.
func TestMachineRetryWaitsForHooks(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s) (on-failure (m.approve :what @failure.code :as @h))`, nil)
	_, calls := f.advance()
	f.advance(failWith(callFor(t, calls, "s"), rbtype.CodeInvalidInput))
	f.advance()
	_, _, err := f.command(&machine.RetryRunbook{})
	require.ErrorIs(t, err, rbtype.ErrConflict)
	_, _, err = f.command(&machine.DecideGate{Step: "h", Approve: false, By: "ada"})
	require.NoError(t, err)
	require.NotNil(t, f.rb.FinishedAt)
	w, _, err := f.command(&machine.RetryRunbook{})
	require.NoError(t, err)
	require.Equal(t, []string{"s"}, eventData[machine.RunbookRetriedData](t, w.Events, "RUNBOOK_RETRIED").Steps)
	require.Equal(t, rbtype.StepFailed, f.step("h").Status)
}

const loopSource = `(m.echo :v $hosts :as @a)
	(for-each @a.v :as @h :parallel 1 (m.send :to @h.name :as @each))
	(m.echo :v @each :as @after)`

// A list of three from a step's result expands, in the advance that
// completes the step, to three instances (MAP_EXPANDED, new steps and
// edges, the plan grown); :parallel 1 runs them one at a time; their
// results arrive as a list in order, with null at the index of one that
// failed under isolate.
func TestMachineForEachExpandsAndCollects(t *testing.T) {
	f := newFixture(t, loopSource, map[string]any{"hosts": "ignored"})
	f.rb.Version = 1
	_, calls := f.advance()
	hosts := []any{map[string]any{"name": "x"}, map[string]any{"name": "y"}, map[string]any{"name": "z"}}
	w, calls := f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": hosts}))
	require.Equal(t, []string{"STEP_SUCCEEDED a", "MAP_EXPANDED"}, eventNames(w.Events))
	require.Equal(t, machine.MapExpandedData{Loop: "h", Count: 3, Steps: 3}, eventData[machine.MapExpandedData](t, w.Events, "MAP_EXPANDED"))
	require.Empty(t, calls)
	require.Len(t, w.NewSteps[f.rb.ID], 3)
	require.Equal(t, "each[0]", w.NewSteps[f.rb.ID][0].Key)
	require.Equal(t, 4, w.NewSteps[f.rb.ID][0].Position)
	require.Contains(t, w.NewEdges[f.rb.ID], driverEdge("a", "each[2]", "data"))
	require.Equal(t, 2, f.rb.Version, "the plan grew: an extension compiled against the old one is refused")
	require.Equal(t, rbtype.RunbookExecuting, f.rb.Status, "not settled: the new steps have yet to run")
	require.Equal(t, f.now, *f.rb.WakeAt)

	var results []any
	_, calls = f.advance()
	for i, name := range []string{"x", "y", "z"} {
		require.Len(t, calls, 1, ":parallel 1: one element at a time")
		c := callFor(t, calls, machine.InstanceKey("each", i))
		require.Equal(t, map[string]any{"to": name}, c.Call.Args)
		if i == 1 {
			w, calls = f.advance(failWith(c, rbtype.CodeInvalidInput))
			results = append(results, nil)
			continue
		}
		w, calls = f.advance(succeed(c, map[string]any{"sent": name}))
		results = append(results, map[string]any{"sent": name})
	}
	require.Empty(t, calls)
	require.Equal(t, []string{"STEP_SUCCEEDED each[2]", "STEP_SUCCEEDED each", "STEP_READY after"}, eventNames(w.Events))
	require.Equal(t, 3, *eventData[machine.StepSucceededData](t, w.Events, "STEP_SUCCEEDED each").Instances)
	_, calls = f.advance()
	var got []any
	require.NoError(t, json.Unmarshal(f.step("each").Result, &got))
	require.Equal(t, results, got)
	require.Equal(t, map[string]any{"v": []any{map[string]any{"sent": "x"}, nil, map[string]any{"sent": "z"}}}, callFor(t, calls, "after").Call.Args)
	w, _ = f.advance(succeed(callFor(t, calls, "after"), map[string]any{}))
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status, "an instance failed under isolate")
	w, _ = f.advance()
	require.Empty(t, w.NewSteps, "a loop expands once")
}

// An empty list completes the template with [] at once, and a list too
// long, or not a list, fails its producer and expands nothing.
func TestMachineForEachBounds(t *testing.T) {
	f := newFixture(t, loopSource, map[string]any{"hosts": "ignored"})
	_, calls := f.advance()
	w, _ := f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": []any{}}))
	require.Equal(t, []string{"STEP_SUCCEEDED a", "MAP_EXPANDED", "STEP_SUCCEEDED each", "STEP_READY after"}, eventNames(w.Events))
	require.JSONEq(t, `[]`, string(f.step("each").Result))
	require.Empty(t, w.NewSteps)

	for _, tc := range []struct {
		list any
		code rbtype.ErrorCode
	}{
		{[]any{1, 2, 3}, rbtype.CodeFanoutTooLarge},
		{"x", rbtype.CodeSchemaValidationFailed},
	} {
		f := newFixture(t, loopSource, map[string]any{"hosts": "ignored"})
		f.m.MaxFanout = 2
		_, calls := f.advance()
		w, _ := f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": tc.list}))
		require.Equal(t, []string{"STEP_FAILED a", "STEP_SKIPPED each", "STEP_SKIPPED after", "RUNBOOK_FAILED"}, eventNames(w.Events))
		failed := eventData[machine.StepFailedData](t, w.Events, "STEP_FAILED a")
		require.Equal(t, tc.code, failed.Code)
		if tc.code == rbtype.CodeFanoutTooLarge {
			require.Contains(t, failed.Message, "holds 3 elements, more than 2")
		}
		require.Empty(t, w.NewSteps)
	}
}

// A list from an input expands at once; a for-each within it over its
// element's field expands in the same advance, and the nested results
// arrive as a list of lists.
func TestMachineForEachNested(t *testing.T) {
	f := newFixture(t, `(for-each $groups :as @g
		  (for-each @g.hosts :as @h (m.echo :v @h :as @each)))
		(m.echo :v @each :as @all)`, map[string]any{"groups": []any{
		map[string]any{"hosts": []any{"a", "b"}}, map[string]any{"hosts": []any{}}}})
	w, calls := f.advance()
	require.Equal(t, []string{"MAP_EXPANDED", "MAP_EXPANDED"}, eventNames(w.Events))
	require.Empty(t, calls)
	keys := []string{}
	for _, n := range w.NewSteps[f.rb.ID] {
		keys = append(keys, n.Key)
	}
	require.Equal(t, []string{"each[0]", "each[1]", "each[0][0]", "each[0][1]"}, keys)

	w, calls = f.advance()
	require.Contains(t, eventNames(w.Events), "MAP_EXPANDED", "the empty inner list, whose template is stored now")
	require.Equal(t, map[string]any{"v": "a"}, callFor(t, calls, "each[0][0]").Call.Args)
	_, calls2 := f.advance(succeed(callFor(t, calls, "each[0][0]"), "a"), succeed(callFor(t, calls, "each[0][1]"), "b"))
	require.Empty(t, calls2)
	for range 3 {
		_, calls2 = f.advance()
		if len(calls2) > 0 {
			break
		}
	}
	require.Equal(t, map[string]any{"v": []any{[]any{"a", "b"}, []any{}}}, callFor(t, calls2, "all").Call.Args)
}

// A plan its expansions grew gives back, without what they added, the
// plan as it was submitted, hash and all: what a regeneration starts
// from, since its lists are its own.
func TestBeforeExpansionIsThePlanSubmitted(t *testing.T) {
	f := newFixture(t, `(m.echo :v $groups :as @a)
		(for-each @a.v :as @g (for-each @g.hosts :as @h (m.echo :v @h :as @each)))
		(m.echo :v @each :as @all)`, map[string]any{"groups": "x"})
	submitted := f.plan.Plan
	require.Same(t, submitted, machine.BeforeExpansion(submitted), "nothing expanded: the plan itself")
	_, calls := f.advance()
	f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": []any{map[string]any{"hosts": []any{"p", "q"}}}}))
	grown := f.plan.Plan
	require.Greater(t, len(grown.Steps), len(submitted.Steps))
	base := machine.BeforeExpansion(grown)
	require.Equal(t, submitted.PlanHash, base.PlanHash)
	require.JSONEq(t, string(submitted.JSON()), string(base.JSON()))
}

// An iteration whose verb declares an outcome records it; its template,
// which did nothing itself, records none, and a step that reads the
// template's list was made from every iteration's outcome.
func TestMachineForEachOutcomes(t *testing.T) {
	f := newFixture(t, `(for-each $notes :as @n (m.draft :v @n :as @drafts)) (m.draft :all @drafts :as @digest)`,
		map[string]any{"notes": []any{"a", "b"}})
	_, calls := f.advance()
	require.Empty(t, calls)
	_, calls = f.advance()
	w, calls := f.advance(succeed(callFor(t, calls, "drafts[0]"), "a"), succeed(callFor(t, calls, "drafts[1]"), "b"))
	require.Equal(t, []string{"STEP_SUCCEEDED drafts[0]", "OUTCOME_RECORDED drafts[0]", "STEP_SUCCEEDED drafts[1]",
		"OUTCOME_RECORDED drafts[1]", "STEP_SUCCEEDED drafts", "STEP_READY digest"}, eventNames(w.Events))
	require.Len(t, w.Outcomes, 2)
	_, calls = f.advance()
	w, _ = f.advance(succeed(callFor(t, calls, "digest"), "ab"))
	require.Len(t, w.Outcomes, 1)
	require.Equal(t, []uuid.UUID{machine.OutcomeID(f.rb.ID, "drafts[0]", 0), machine.OutcomeID(f.rb.ID, "drafts[1]", 0)}, w.Outcomes[0].Consumed)
}

// A list written out under a :parallel smaller than it is kept as a loop
// by the compiler and expanded in the first round, so that :parallel
// holds: one element at a time. An element that names a step reads it
// when its instance runs, after that step (the element is not read as
// the list expands).
func TestMachineForEachWrittenOutParallel(t *testing.T) {
	f := newFixture(t, `(m.echo :v "lb0" :as @first)
		(for-each [@first.v "lb1" "lb2"] :as @lb :parallel 1 (m.echo :v @lb :as @up))
		(m.echo :v @up :as @all)`, nil)
	w, calls := f.advance()
	require.Equal(t, machine.MapExpandedData{Loop: "lb", Count: 3, Steps: 3}, eventData[machine.MapExpandedData](t, w.Events, "MAP_EXPANDED"))
	require.Len(t, calls, 1)
	_, calls = f.advance(succeed(callFor(t, calls, "first"), map[string]any{"v": "lb0"}))
	for i, name := range []string{"lb0", "lb1", "lb2"} {
		if len(calls) == 0 {
			_, calls = f.advance()
		}
		require.Len(t, calls, 1, ":parallel 1: one element at a time")
		c := callFor(t, calls, machine.InstanceKey("up", i))
		require.Equal(t, map[string]any{"v": name}, c.Call.Args)
		_, calls = f.advance(succeed(c, name))
	}
	if len(calls) == 0 {
		_, calls = f.advance()
	}
	require.Equal(t, map[string]any{"v": []any{"lb0", "lb1", "lb2"}}, callFor(t, calls, "all").Call.Args)
}

// A gate the policy froze on a template's row at admission holds its
// instances too, at every depth: an expansion does not make a way around
// the policy.
func TestMachineForEachInstancesKeepThePolicysGate(t *testing.T) {
	f := newFixture(t, `(m.echo :v $groups :as @a)
		(for-each @a.v :as @g (for-each @g.hosts :as @h (m.echo :v @h :as @each)))`, map[string]any{"groups": "x"})
	f.step("each").Gate = rbtype.GateHumanConfirm // as admit.go's gate leaves it
	_, calls := f.advance()
	w, calls := f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": []any{map[string]any{"hosts": []any{"p", "q"}}}}))
	require.Equal(t, []string{"each[0]", "each[0][0]", "each[0][1]"}, newKeys(w, f))
	for _, n := range w.NewSteps[f.rb.ID] {
		require.Equal(t, rbtype.GateHumanConfirm, n.Gate, n.Key)
	}
	w, calls = f.advance()
	require.Empty(t, calls, "no instance runs before a person approves it")
	require.Equal(t, rbtype.StepWaitingApproval, f.step("each[0][0]").Status)
	require.Equal(t, rbtype.StepWaitingApproval, f.step("each[0][1]").Status)

	plain := newFixture(t, `(m.echo :v $groups :as @a)
		(for-each @a.v :as @g (m.echo :v @g :as @each))`, map[string]any{"groups": "x"})
	_, calls = plain.advance()
	w, _ = plain.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": []any{"p"}}))
	require.Equal(t, rbtype.GateNone, w.NewSteps[plain.rb.ID][0].Gate, "without the policy's gate, the verb's")
}

func newKeys(w driver.AdvanceWrite, f *fixture) []string {
	var keys []string
	for _, n := range w.NewSteps[f.rb.ID] {
		keys = append(keys, n.Key)
	}
	return keys
}

// The daemon's step limit (--max-steps) counts the steps an expansion
// would add: a list that would take the runbook past it fails its
// producer, and nothing is expanded.
func TestMachineForEachHeldToMaxSteps(t *testing.T) {
	f := newFixture(t, loopSource, map[string]any{"hosts": "ignored"})
	f.m.Limits.MaxSteps = 5
	_, calls := f.advance()
	w, _ := f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": []any{"x", "y", "z"}}))
	failed := eventData[machine.StepFailedData](t, w.Events, "STEP_FAILED a")
	require.Equal(t, rbtype.CodeFanoutTooLarge, failed.Code)
	require.Equal(t, "expanding (for-each ... :as @h) would make 6 steps; --max-steps allows 5", failed.Message)
	require.Empty(t, w.NewSteps)
}

// A draft_only runbook's failure hook that would reach outside is skipped
// DRAFT_ONLY like any such step, and the runbook finishes.
func TestMachineDraftOnlyHookIsSkipped(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @a) (on-failure (m.call :v @failure.code :as @notify))`, nil)
	f.rb.Mode = rbtype.ModeDraftOnly
	_, calls := f.advance()
	f.advance(failWith(callFor(t, calls, "a"), rbtype.CodeInvalidInput))
	w, calls := f.advance()
	require.Empty(t, calls)
	require.Equal(t, []string{"STEP_SKIPPED notify"}, eventNames(w.Events))
	require.Equal(t, rbtype.CodeDraftOnly, f.step("notify").ErrorCode)
	require.NotNil(t, f.rb.FinishedAt)
}
