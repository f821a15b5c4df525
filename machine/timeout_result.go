package machine

import (
	"encoding/json"
	"time"

	"github.com/runbookdev/runbook/rbtype"
)

// A wait's default (docs/design/language.md v1.4, :timeout-result): a
// durable step whose call gives :timeout-result MAP succeeds with MAP when
// its park times out, in place of its verb's on_timeout. "5 days, then
// revoke" is a review that, unanswered, decided revoke. The result is
// marked as a default (STEP_TIMEOUT_DEFAULTED, and provenance "default"
// on STEP_SUCCEEDED) so that no one reads it as a person's answer.

// StepTimeoutDefaultedData is the data of STEP_TIMEOUT_DEFAULTED: the
// wait that timed out and the result the step took instead.
type StepTimeoutDefaultedData struct {
	CorrelationKey string          `json:"correlation_key"`
	TimeoutAt      time.Time       `json:"timeout_at"`
	Result         json.RawMessage `json:"result"`
}

// ProvenanceDefault marks a result that no call produced: the
// :timeout-result a wait took at its timeout.
const ProvenanceDefault = "default"

// defaultAtTimeout completes a timed-out park with its step's
// :timeout-result, and reports whether it did; a step without one times
// out as its verb's on_timeout says. The map was checked against the
// verb's output_schema when the plan was compiled; a plan from outside is
// checked again here, and one whose default does not match fails the step
// as a result that does not match would.
func (t *transition) defaultAtTimeout(s *rbtype.Step, inv *rbtype.Invocation) bool {
	ps := t.plan.Steps[s.Key]
	if ps == nil || ps.TimeoutResult == nil {
		return false
	}
	result, err := json.Marshal(ps.TimeoutResult)
	if err != nil {
		return false // not JSON: the verb's on_timeout decides
	}
	t.attemptEnded(s, s.Attempt, AttemptID(t.Rb.ID, s.Key, s.Attempt), attemptSucceeded, rbtype.CodeParkTimeout, "off")
	t.finishInvocation(s, rbtype.InvocationTimedOut)
	t.event(rbtype.EventStepTimedOut, s, StepTimedOutData{
		CorrelationKey: inv.CorrelationKey, TimeoutAt: inv.TimeoutAt, OnTimeout: onTimeoutDefault,
	})
	if bad := t.checkOutput(s, result); bad != nil {
		t.failStep(s, bad)
		return true
	}
	t.event(rbtype.EventStepTimeoutDefaulted, s, StepTimeoutDefaultedData{
		CorrelationKey: inv.CorrelationKey, TimeoutAt: inv.TimeoutAt, Result: result,
	})
	t.complete(s, result, false, StepSucceededData{Provenance: ProvenanceDefault})
	return true
}

// onTimeoutDefault is the on_timeout STEP_TIMED_OUT names for a wait that
// takes its :timeout-result.
const onTimeoutDefault rbtype.OnTimeout = "default"
