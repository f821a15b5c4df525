package runtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Where two forms meet (docs/design/semantics.md, "The forms compose"):
// each case here ended a runbook dishonestly before the rule was kept.

// parkAll parks every durable call of calls and succeeds the others with
// {"v": 1}, in one advance.
func (f *fixture) answer(calls []*machine.PendingCall, park map[string]bool) []*machine.PendingCall {
	f.t.Helper()
	var outs []*machine.Outcome
	for _, c := range calls {
		if park[c.Call.StepKey] {
			outs = append(outs, parked(c, ""))
			continue
		}
		outs = append(outs, succeed(c, map[string]any{"v": 1}))
	}
	_, next := f.advance(outs...)
	return next
}

// settleRounds advances until a round leases nothing new and writes no
// event, answering every call it leases with {"v": 1}.
func (f *fixture) settleRounds() {
	f.t.Helper()
	for range 20 {
		w, calls := f.advance()
		for len(calls) > 0 {
			calls = f.answer(calls, nil)
		}
		if len(w.Events) == 0 {
			return
		}
	}
}

// An iteration that escalated and was then resolved reopens its loop:
// the list, and what reads it, run; the runbook does not end complete
// with them skipped.
func TestComposeResolvedIterationReopensItsLoop(t *testing.T) {
	for _, action := range []string{machine.ResolveComplete, machine.ResolveRetry} {
		t.Run(action, func(t *testing.T) {
			f := newFixture(t, `(for-each $xs :as @x (m.wait-escalate :v @x :as @w))
				(m.echo :v @w :as @report)`, map[string]any{"xs": []any{1, 2}})
			_, calls := f.advance()
			require.Empty(t, calls)
			_, calls = f.advance()
			calls = f.answer(calls, map[string]bool{"w[0]": true, "w[1]": true})
			require.Empty(t, calls)
			f.notify("w[0]", rbtype.OutcomeCompleted, `{"v":1}`, "")
			f.advance()
			f.now = f.now.Add(2 * time.Hour)
			f.advance()
			require.Equal(t, rbtype.StepEscalated, f.step("w[1]").Status)
			require.Equal(t, rbtype.RunbookEscalated, f.rb.Status)

			_, calls, err := f.command(&machine.ResolveStep{Step: "w[1]", R: machine.Resolution{Action: action, Result: json.RawMessage(`{"v":2}`), By: "ops"}})
			require.NoError(t, err)
			require.Equal(t, rbtype.RunbookExecuting, f.rb.Status)
			require.NotEqual(t, rbtype.StepSkipped, f.step("w").Status, "the list is reopened")
			require.NotEqual(t, rbtype.StepSkipped, f.step("report").Status, "and what reads it")
			if action == machine.ResolveRetry {
				f.answer(calls, map[string]bool{"w[1]": true})
				f.notify("w[1]", rbtype.OutcomeCompleted, `{"v":2}`, "")
			}
			for range 5 {
				_, calls = f.advance()
				if len(calls) > 0 {
					break
				}
			}
			require.Equal(t, map[string]any{"v": []any{map[string]any{"v": json.Number("1")}, map[string]any{"v": json.Number("2")}}},
				callFor(t, calls, "report").Call.Args, "the whole list")
			f.answer(calls, nil)
			require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
		})
	}
}

// While an iteration is escalated, nothing that reads the loop's list
// runs, even through a later step of the same iteration or a nested
// loop: the list is whole or it is not ready.
func TestComposeEscalatedIterationHoldsTheList(t *testing.T) {
	for name, src := range map[string]string{
		"a later step of the iteration": `(for-each $xs :as @x (m.wait-escalate :v @x :as @w) (m.echo :v @w.v :as @after))
			(m.echo :v @after :as @report)`,
		"a nested loop": `(for-each $groups :as @g (for-each @g.xs :as @x (m.wait-escalate :v @x :as @after)))
			(m.echo :v @after :as @report)`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, src, map[string]any{"xs": []any{1, 2}, "groups": []any{map[string]any{"xs": []any{1}}, map[string]any{"xs": []any{2}}}})
			for range 6 {
				_, calls := f.advance()
				var parks []*machine.Outcome
				for _, c := range calls {
					if c.Call.CorrelationKey != "" {
						parks = append(parks, parked(c, ""))
					} else {
						parks = append(parks, succeed(c, map[string]any{"v": 1}))
					}
				}
				if len(parks) > 0 {
					f.advance(parks...)
				}
			}
			var first, second string
			for _, s := range f.steps {
				if s.Status == rbtype.StepParked {
					if first == "" {
						first = s.Key
					} else {
						second = s.Key
					}
				}
			}
			require.NotEmpty(t, second, "%v", f)
			f.notify(first, rbtype.OutcomeCompleted, `{"v":1}`, "")
			f.advance()
			f.now = f.now.Add(2 * time.Hour)
			for range 4 {
				_, calls := f.advance()
				require.NotContains(t, keysOf(calls), "report", "report must not run: %v", f)
				f.answer(calls, nil)
			}
			require.NotEqual(t, rbtype.StepComplete, f.step("report").Status, "%v", f)
			require.NotEqual(t, rbtype.StepComplete, f.step("after").Status, "the list is not whole: %v", f)
			require.Equal(t, rbtype.RunbookEscalated, f.rb.Status)
		})
	}
}

// In draft_only, a step that reads a list holding a drafted item is
// drafted too, not run with nulls; running the draft for real runs the
// items and then the reader, once.
func TestComposeDraftTaintsWhatReadsIt(t *testing.T) {
	f := newFixture(t, `(for-each $users :as @u (m.call :user @u :as @erase))
		(m.echo :erased @erase :as @receipt)`, map[string]any{"users": []any{"a", "b"}})
	f.rb.Mode = rbtype.ModeDraftOnly
	f.settleRounds()
	require.Equal(t, rbtype.StepSkipped, f.step("erase[0]").Status)
	require.Equal(t, rbtype.CodeDraftOnly, f.step("erase").ErrorCode, "a list holding a draft is a draft: %v", f)
	require.Equal(t, rbtype.StepSkipped, f.step("receipt").Status)
	require.Equal(t, rbtype.CodeDraftOnly, f.step("receipt").ErrorCode, "what reads a draft is a draft")
	require.Equal(t, rbtype.RunbookPartial, f.rb.Status)

	_, calls, err := f.command(&machine.RetryRunbook{O: machine.RetryOptions{Execute: true, By: "ops"}})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"erase[0]", "erase[1]"}, keysOf(calls), "the items first; the receipt waits for them")
	calls = f.answer(calls, nil)
	for len(calls) == 0 && f.rb.Status == rbtype.RunbookExecuting {
		_, calls = f.advance()
	}
	require.Equal(t, []string{"receipt"}, keysOf(calls))
	require.Equal(t, map[string]any{"erased": []any{map[string]any{"v": json.Number("1")}, map[string]any{"v": json.Number("1")}}}, calls[0].Call.Args)
	f.answer(calls, nil)
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
}

func keysOf(calls []*machine.PendingCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Call.StepKey)
	}
	return out
}

// advanceWhileDue advances as the engine does: only while the runbook's
// wake-up has come, answering every call with {"v": 1} (parking waits).
func (f *fixture) advanceWhileDue() {
	f.t.Helper()
	for range 30 {
		if w := f.rb.WakeAt; w == nil || w.After(f.now) {
			return
		}
		_, calls := f.advance()
		for len(calls) > 0 {
			calls = f.answer(calls, nil)
		}
	}
}

// A runbook never waits for nothing: a loop whose last instances are
// skipped by their conditions in a round's last pass, or one whose
// :parallel elements a draft skips one by one, asks for the rounds that
// end it (found by the soak's generated runbooks and the model check).
func TestComposeNothingWaitsForNothing(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		mode rbtype.Mode
		want rbtype.RunbookStatus
	}{
		"conditions skip the last iterations": {`(for-each $xs :as @x (m.echo :v @x :when (< @x 0) :as @e) (m.echo :v @e.v :as @t))
			(m.echo :after @t :as @join)`, rbtype.ModeExecute, rbtype.RunbookComplete},
		"a draft skips :parallel elements": {`(for-each $xs :as @x :parallel 1 (m.call :v @x :as @e))
			(m.echo :v @e :as @report)`, rbtype.ModeDraftOnly, rbtype.RunbookPartial},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.src, map[string]any{"xs": []any{0, 1, 2}})
			f.rb.Mode = tc.mode
			f.rb.WakeAt = &f.now
			f.advanceWhileDue()
			require.Equal(t, tc.want, f.rb.Status, "%v", f)
		})
	}
}

// An abort skips every step that has not started, those of a loop its
// own round expanded among them. The list completes (and spends the
// budget) in the round where the step after it fails as it starts, under
// abort: the instances the round made must not run, nor ask a person to
// approve them, in the rounds after.
func TestComposeAbortSkipsTheLoopItsRoundExpanded(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @l)
(for-each @l.items :as @x (m.approve :e @x :as @y))
(m.echo :v 2 :after @l :as @b)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 1}}\n")
	_, calls := f.advance()
	require.Len(t, calls, 1)
	_, calls = f.advance(costing(calls[0], map[string]any{"items": []any{1, 2}}, 1))
	require.Empty(t, calls)
	require.Equal(t, rbtype.StepFailed, f.step("b").Status)
	require.Equal(t, rbtype.CodeBudgetExceeded, f.step("b").ErrorCode)
	for range 3 {
		_, calls = f.advance()
		require.Empty(t, calls, "nothing runs after the abort")
	}
	for _, k := range []string{"y", "y[0]", "y[1]"} {
		require.Equal(t, rbtype.StepSkipped, f.step(k).Status, "%s, after the abort: %v", k, f)
	}
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
}
