package machine

import (
	"encoding/json"
	"time"

	"github.com/runbookdev/runbook/rbtype"
)

// timeouts ends parks past their timeout: a timer completes, a step with
// a :timeout-result succeeds with it, anything else fails or escalates as
// its verb's on_timeout says.
func (t *transition) timeouts() {
	for _, s := range t.Steps {
		if s.Status != rbtype.StepParked {
			continue
		}
		inv, ok := t.invocations[s.ID]
		if !ok {
			continue
		}
		if inv.TimeoutAt.After(t.Now) {
			t.remindIfDue(s, inv) // :remind-after (remind.go)
			continue
		}
		t.sawPark(s, inv, "")
		if until, ok := TimerUntil(inv); ok && !until.After(t.Now) {
			t.attemptEnded(s, s.Attempt, AttemptID(t.Rb.ID, s.Key, s.Attempt), attemptSucceeded, "", "off")
			t.finishInvocation(s, rbtype.InvocationCompleted)
			t.event(rbtype.EventStepResumed, s, StepResumedData{CorrelationKey: inv.CorrelationKey, Timer: true})
			result, err := json.Marshal(timerResult{SleptUntil: until})
			if err != nil && t.err == nil {
				t.err = err
			}
			t.complete(s, result, false, StepSucceededData{})
			continue
		}
		if t.defaultAtTimeout(s, inv) {
			continue // :timeout-result (timeout_result.go)
		}
		exec := t.execution(s)
		t.attemptEnded(s, s.Attempt, AttemptID(t.Rb.ID, s.Key, s.Attempt), AttemptFailed, rbtype.CodeParkTimeout, "off")
		t.finishInvocation(s, rbtype.InvocationTimedOut)
		t.event(rbtype.EventStepTimedOut, s, StepTimedOutData{
			CorrelationKey: inv.CorrelationKey, TimeoutAt: inv.TimeoutAt, OnTimeout: exec.Timeouts.OnTimeout,
		})
		if exec.Timeouts.OnTimeout == rbtype.OnTimeoutEscalate {
			t.moveStep(s, rbtype.StepEscalated)
			s.FinishedAt = &t.Now
			s.ErrorCode, s.ErrorMessage = rbtype.CodeParkTimeout, "no notification before the park timeout; escalated to a person"
			t.scheduleEscalation(s, &exec)
			t.touch(s)
			continue
		}
		s.ErrorCode, s.ErrorMessage = rbtype.CodeParkTimeout, "no notification before the park timeout"
		t.moveStep(s, rbtype.StepFailed)
		s.FinishedAt = &t.Now
		t.touch(s)
		t.event(rbtype.EventStepFailed, s, StepFailedData{Code: rbtype.CodeParkTimeout, Message: s.ErrorMessage})
		t.failed(s)
	}
}

// timerContext is the context a timer's invocation keeps.
type timerContext struct {
	TimerUntil *time.Time `json:"timer_until"`
}

// timerResult is the result of a timer that reached its time.
type timerResult struct {
	SleptUntil time.Time `json:"slept_until"`
}

// TimerUntil is when a timer.sleep wait ends, and whether the invocation is
// one.
func TimerUntil(inv *rbtype.Invocation) (time.Time, bool) {
	var c timerContext
	if json.Unmarshal(inv.Context, &c) != nil || c.TimerUntil == nil {
		return time.Time{}, false
	}
	return *c.TimerUntil, true
}

// retries makes due retries ready.
func (t *transition) retries() {
	for _, s := range t.Steps {
		if s.Status == rbtype.StepFailedRetryable && s.NextAttemptAt != nil && !s.NextAttemptAt.After(t.Now) {
			t.moveStep(s, rbtype.StepReady)
			s.NextAttemptAt = nil
			t.touch(s)
			t.readied(s, &StepReadyData{Retry: true})
		}
	}
}
