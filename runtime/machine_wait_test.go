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

// parked → parked (STEP_REMINDED): at its :remind-after (here the verb's
// timeouts.remind_after) a wait's escalation verb runs once, under a key
// of its own, and the wait goes on; the page at the timeout is another
// call, under the escalation's key.
func TestMachineRemindAfter(t *testing.T) {
	f := newFixture(t, `(m.wait-remind :who "dpo" :as @review)`, nil)
	_, calls := f.advance()
	f.advance(parked(callFor(t, calls, "review"), ""))
	parkedAt := f.now
	require.True(t, f.rb.WakeAt.Equal(parkedAt.Add(20*time.Minute)), "wakes for the reminder, before the timeout: %v", f.rb.WakeAt)

	f.now = parkedAt.Add(19 * time.Minute)
	w, _ := f.advance()
	require.Empty(t, w.Events, "not yet")
	f.now = parkedAt.Add(20 * time.Minute)
	w, calls = f.advance()
	require.Equal(t, []string{"STEP_REMINDED review", "ESCALATION_STARTED review"}, eventNames(w.Events))
	d := eventData[machine.StepRemindedData](t, w.Events, "STEP_REMINDED review")
	require.Equal(t, "PT20M", d.RemindAfter)
	require.Equal(t, "m.page", d.Verb)
	require.Equal(t, rbtype.StepParked, f.step("review").Status, "the wait goes on")
	page := callFor(t, calls, "review")
	require.Equal(t, "m.page", page.Call.Verb)
	require.Equal(t, map[string]any{"who": "dpo"}, page.Call.Args)
	w, _ = f.advance(succeed(page, map[string]any{"paged": true}))
	require.Equal(t, []string{"ESCALATION_SUCCEEDED review"}, eventNames(w.Events))
	require.True(t, f.rb.WakeAt.Equal(parkedAt.Add(time.Hour)), "now it wakes at the timeout: %v", f.rb.WakeAt)

	// Once: later rounds send no second reminder.
	f.now = parkedAt.Add(40 * time.Minute)
	w, _ = f.advance()
	require.Empty(t, w.Events)

	// The timeout escalates and pages again, under another key.
	f.now = parkedAt.Add(time.Hour)
	w, calls = f.advance()
	require.Equal(t, []string{"STEP_TIMED_OUT review", "ESCALATION_STARTED review", "RUNBOOK_ESCALATED"}, eventNames(w.Events))
	again := callFor(t, calls, "review")
	require.Equal(t, "m.page", again.Call.Verb)
	require.NotEqual(t, page.Call.IdempotencyKey, again.Call.IdempotencyKey, "the timeout's page is not the reminder's")
}

// A notification before the reminder: no reminder is sent.
func TestMachineRemindAfterNotSentWhenAnswered(t *testing.T) {
	f := newFixture(t, `(m.wait-remind :who "dpo" :as @review)`, nil)
	_, calls := f.advance()
	f.advance(parked(callFor(t, calls, "review"), ""))
	f.now = f.now.Add(10 * time.Minute)
	f.notify("review", rbtype.OutcomeCompleted, `{"ok":true}`, "")
	f.advance()
	f.now = f.now.Add(30 * time.Minute)
	w, _ := f.advance()
	require.NotContains(t, eventNames(w.Events), "STEP_REMINDED review")
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
}
