package runtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// A wait's default and reminder (docs/design/language.md v1.4).

// parked → complete (STEP_TIMEOUT_DEFAULTED): a wait with a
// :timeout-result succeeds with it at its timeout, in place of its verb's
// on_timeout, and what reads it runs with the default.
func TestMachineTimeoutResult(t *testing.T) {
	for _, verb := range []string{"m.wait", "m.wait-escalate"} {
		t.Run(verb, func(t *testing.T) {
			f := newFixture(t, `(`+verb+` :who "ada" :timeout-result {:decision "revoke"} :as @review)
				(m.echo :v @review.decision :as @after)`, nil)
			_, calls := f.advance()
			f.advance(parked(callFor(t, calls, "review"), ""))
			f.now = f.now.Add(59 * time.Minute)
			w, _ := f.advance()
			require.Empty(t, w.Events, "not yet")
			f.now = f.now.Add(time.Minute)
			w, calls = f.advance()
			require.Equal(t, []string{"STEP_TIMED_OUT review", "STEP_TIMEOUT_DEFAULTED review", "STEP_SUCCEEDED review", "STEP_STARTED after"}, eventNames(w.Events))
			require.Equal(t, rbtype.StepComplete, f.step("review").Status)
			require.JSONEq(t, `{"decision":"revoke"}`, string(f.step("review").Result))
			require.Equal(t, machine.ProvenanceDefault, eventData[machine.StepSucceededData](t, w.Events, "STEP_SUCCEEDED review").Provenance)
			d := eventData[machine.StepTimeoutDefaultedData](t, w.Events, "STEP_TIMEOUT_DEFAULTED review")
			require.JSONEq(t, `{"decision":"revoke"}`, string(d.Result))
			require.Len(t, w.Finished[rbtype.InvocationTimedOut], 1)
			require.Empty(t, w.Receipts, "a default is no effect: no receipt is kept under the wait's key")
			require.Equal(t, map[string]any{"v": "revoke"}, callFor(t, calls, "after").Call.Args)
			f.advance(succeed(callFor(t, calls, "after"), map[string]any{"v": "revoke"}))
			require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
		})
	}
}

// A notification before the timeout is the result; the default is not
// taken.
func TestMachineTimeoutResultNotTakenWhenAnswered(t *testing.T) {
	f := newFixture(t, `(m.wait :who "ada" :timeout-result {:decision "revoke"} :as @review)`, nil)
	_, calls := f.advance()
	f.advance(parked(callFor(t, calls, "review"), ""))
	f.now = f.now.Add(30 * time.Minute)
	f.notify("review", rbtype.OutcomeCompleted, `{"decision":"keep"}`, "")
	w, _ := f.advance()
	require.NotContains(t, eventNames(w.Events), "STEP_TIMEOUT_DEFAULTED review")
	var got map[string]any
	require.NoError(t, json.Unmarshal(f.step("review").Result, &got))
	require.Equal(t, map[string]any{"decision": "keep"}, got)
	f.now = f.now.Add(time.Hour)
	w, _ = f.advance()
	require.Empty(t, w.Events)
}
