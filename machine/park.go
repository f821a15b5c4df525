package machine

import (
	"encoding/json"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// park records a durable step's park (steps 4 of docs/design/runtime.md): the external
// id, the step parked, and, if its notification came first, its immediate
// resumption.
func (t *transition) park(s *rbtype.Step, o *Outcome) {
	inv, ok := t.invocations[s.ID]
	if !ok {
		t.failStep(s, handler.Errorf(rbtype.CodeInternal, "the step parked without an active invocation"))
		return
	}
	update := rbtype.InvocationUpdate{ID: inv.InvocationID, ExternalID: o.Result.ExternalID()}
	if o.Result.Until() != nil {
		// A timer resumes itself at until, or times out first at its
		// park_timeout.
		until := *o.Result.Until()
		if until.Before(inv.TimeoutAt) {
			inv.TimeoutAt = until
			update.TimeoutAt = &until
		}
		ctx, err := json.Marshal(timerContext{TimerUntil: &until})
		if err != nil && t.err == nil {
			t.err = err
		}
		update.Context, inv.Context = ctx, ctx
	}
	t.invocationUpdates = append(t.invocationUpdates, update)
	t.moveStep(s, rbtype.StepParked)
	t.touch(s)
	t.event(rbtype.EventStepParked, s, StepParkedData{CorrelationKey: inv.CorrelationKey, TimeoutAt: inv.TimeoutAt})
	if failed := t.abortedBy(); failed != nil {
		// The call was in flight when the runbook aborted: its park is
		// recorded, and its wait cancelled at once.
		t.cancelAborted(s, failed)
	}
}

// consumeNotifications resumes parked steps whose notification is in the
// inbox, and durable steps in doubt whose wait's notification came: the
// start they were cut off in happened after all (in_doubt.go).
func (t *transition) consumeNotifications() {
	for _, s := range t.Steps {
		if s.Status != rbtype.StepParked && s.Status != rbtype.StepInDoubt {
			continue
		}
		inv, ok := t.invocations[s.ID]
		if !ok {
			continue
		}
		n, ok := t.notes[inv.CorrelationKey]
		if !ok {
			continue
		}
		t.processed = append(t.processed, n.ID)
		delete(t.notes, inv.CorrelationKey)
		t.m.Observe.Resumed(t.Now.Sub(n.ReceivedAt))
		t.sawPark(s, inv, n.TraceParent)
		t.finishInvocation(s, rbtype.InvocationCompleted)
		t.event(rbtype.EventStepResumed, s, StepResumedData{CorrelationKey: inv.CorrelationKey, Outcome: n.Outcome})
		if n.Outcome == rbtype.OutcomeFailed {
			code := n.ErrorCode
			if code == "" {
				code = rbtype.CodeInternal
			}
			t.record(s, s.Attempt, AttemptFailed, code, "off", n.Usage)
			t.failStep(s, &handler.Error{Code: code, Message: n.ErrorMessage})
			continue
		}
		result := n.Result
		if len(result) == 0 || string(result) == "null" {
			result = json.RawMessage(`{}`)
		}
		if err := t.checkOutput(s, result); err != nil {
			t.record(s, s.Attempt, AttemptFailed, err.Code, "off", n.Usage)
			t.failStep(s, err)
			continue
		}
		if exec := t.execution(s); exec.SideEffects != rbtype.SideEffectsNone {
			t.receipts = append(t.receipts, rbtype.Receipt{
				Handler: exec.Handler, IdempotencyKey: s.IdempotencyKey, RunbookID: t.Rb.ID, Scope: exec.Idempotency.Scope,
				StepKey: s.Key, Result: result, ResultHash: HashJSON(result),
			})
		}
		t.record(s, s.Attempt, attemptSucceeded, "", "off", n.Usage)
		t.complete(s, result, false, StepSucceededData{})
	}
}
