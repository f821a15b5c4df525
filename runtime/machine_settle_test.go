package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// Status tests and their settle edges (docs/design/semantics.md section
// 15, "A status test waits for the step, and is not skipped by it").

// settleSource is the access review's "else": revoke when the review did
// not succeed, and note it when the review left no decision.
const settleSource = `(m.wait :who "ada" :when (= $review true) :on-failure "isolate" :as @review)
	(m.send :to "revoke" :when (!= (status @review) "succeeded") :as @revoke)
	(m.echo :v "no decision" :when (and (!= (status @review) "succeeded") (not (exists @review.decision))) :as @note)`

// The revoke runs when the review failed, timed out (failed or
// escalated), or was skipped; it is skipped CONDITION_FALSE when the
// review succeeded. A field of a review that did not succeed does not
// exist: the note runs too.
func TestMachineStatusTestRunsTheElse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		verb   string
		review bool
		end    func(f *fixture)
		status rbtype.StepStatus
	}{
		{name: "failed", verb: "m.wait", review: true, status: rbtype.StepFailed, end: func(f *fixture) {
			f.notify("review", rbtype.OutcomeFailed, ``, rbtype.CodePolicyDenied)
		}},
		{name: "timed out", verb: "m.wait", review: true, status: rbtype.StepFailed, end: func(f *fixture) {
			f.now = f.now.Add(time.Hour)
		}},
		{name: "escalated", verb: "m.wait-escalate", review: true, status: rbtype.StepEscalated, end: func(f *fixture) {
			f.now = f.now.Add(time.Hour)
		}},
		{name: "skipped", verb: "m.wait", review: false, status: rbtype.StepSkipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := settleSource
			if tc.verb != "m.wait" {
				src = "(" + tc.verb + src[len("(m.wait"):]
			}
			f := newFixture(t, src, map[string]any{"review": tc.review})
			_, calls := f.advance()
			if tc.review {
				require.Equal(t, rbtype.StepPending, f.step("revoke").Status, "waits for the review to settle")
				f.advance(parked(callFor(t, calls, "review"), ""))
				require.Equal(t, rbtype.StepPending, f.step("revoke").Status, "a parked review has not settled")
				tc.end(f)
				_, calls = f.advance()
			} else {
				// Skipped by its condition in the first advance: the
				// revoke's condition is decided in the next.
				require.Equal(t, rbtype.StepPending, f.step("revoke").Status)
				_, calls = f.advance()
			}
			require.Equal(t, tc.status, f.step("review").Status)
			require.Equal(t, rbtype.StepRunning, f.step("revoke").Status, "the else runs: %s", f)
			require.Equal(t, map[string]any{"to": "revoke"}, callFor(t, calls, "revoke").Call.Args)
			require.NotEqual(t, rbtype.StepSkipped, f.step("note").Status, "(exists @review.decision) is false, not a skip: %s", f)
			f.advance(succeed(callFor(t, calls, "revoke"), map[string]any{"revoked": true}), succeed(callFor(t, calls, "note"), map[string]any{"v": "no decision"}))
			require.Equal(t, rbtype.StepComplete, f.step("revoke").Status)
			require.Equal(t, rbtype.StepComplete, f.step("note").Status)
			require.False(t, f.rb.Status.Running(), "the runbook has ended: %s", f)
		})
	}
}

// A review that succeeded skips the else (CONDITION_FALSE), and the
// runbook completes: the result is read through the settle edge.
func TestMachineStatusTestSkipsTheElseOnSuccess(t *testing.T) {
	f := newFixture(t, settleSource+` (m.echo :v 1 :when (= (status @review) "succeeded") :as @kept)`, map[string]any{"review": true})
	_, calls := f.advance()
	f.advance(parked(callFor(t, calls, "review"), ""))
	f.notify("review", rbtype.OutcomeCompleted, `{"decision":"keep"}`, "")
	w, calls := f.advance()
	require.Equal(t, rbtype.StepComplete, f.step("review").Status)
	require.Equal(t, rbtype.StepSkipped, f.step("revoke").Status)
	require.Equal(t, rbtype.CodeConditionFalse, f.step("revoke").ErrorCode)
	require.Equal(t, rbtype.StepSkipped, f.step("note").Status)
	require.Contains(t, eventNames(w.Events), "STEP_STARTED kept")
	f.advance(succeed(callFor(t, calls, "kept"), map[string]any{"v": 1}))
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status, "%s", f)
}

// A status test on a step that failed under abort never runs: the abort
// skips everything that has not started (docs/reference/language.md).
func TestMachineStatusTestAfterAnAbort(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :on-failure "abort" :as @a)
		(m.echo :v 1 :when (= (status @a) "failed") :as @b)`, nil)
	_, calls := f.advance()
	f.advance(failWith(callFor(t, calls, "a"), rbtype.CodeInvalidInput))
	require.Equal(t, rbtype.StepSkipped, f.step("b").Status)
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
}
