package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// Cancel stops a runbook: its active invocations are cancelled, every step
// not yet final is cancelled, and later notifications for it are kept and
// ignored. Completed work stays readable. Cancelling a cancelled runbook
// is a no-op; a finished one is a conflict.
//
// Once that has committed, each cancelled wait whose handler can ask the
// outside world to stop (a Canceller: http.start with params.cancel_url)
// is asked, best effort, and the answer recorded as
// INVOCATION_CANCEL_SENT or INVOCATION_CANCEL_FAILED. A daemon that dies
// in between does not ask: the runbook is cancelled either way, and later
// notifications for it are ignored.
func (e *Engine) Cancel(ctx context.Context, runbookID uuid.UUID, by string) error {
	by, note := actorOf(ctx, by)
	var asks []*pendingCall
	var traced func()
	err := e.locked(ctx, runbookID, func(tx driver.Tx, rb *driver.Runbook, steps []*driver.Step) error {
		traced = nil
		if rb.Status == rbtype.RunbookCancelled {
			return nil
		}
		invs, err := tx.ActiveInvocations(ctx, []uuid.UUID{runbookID})
		if err != nil {
			return err
		}
		now := time.Now()
		traced = func() { e.emitCancelled(ctx, rb, steps, invs, now) }
		c, err := cancelRunbook(now, e.workerID, rb, steps, invs, by, note)
		if err != nil {
			return err
		}
		if asks, err = e.cancelAsks(rb, steps, invs); err != nil {
			return err
		}
		return tx.ApplyChange(ctx, c)
	})
	if err != nil {
		return err
	}
	if traced != nil {
		traced()
	}
	for _, a := range asks {
		e.askToCancel(ctx, a)
	}
	return nil
}

// maxCancelWait bounds one request asking the outside world to stop.
const maxCancelWait = 10 * time.Second

// cancelAsks lists the cancelled waits whose handlers can ask the outside
// world to stop, each as the call to make.
func (e *Engine) cancelAsks(rb *driver.Runbook, steps []*driver.Step, invs []driver.Invocation) ([]*pendingCall, error) {
	if len(invs) == 0 {
		return nil, nil
	}
	plan, err := e.planOf(rb)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*driver.Step{}
	for _, s := range steps {
		byID[s.ID] = s
	}
	var asks []*pendingCall
	for _, inv := range invs {
		s := byID[inv.StepID]
		if s == nil {
			continue
		}
		ps, ok := plan.steps[s.Key]
		if !ok {
			continue
		}
		h, ok := e.handlers.lookup(ps.Execution.Handler)
		if _, can := h.(Canceller); !ok || !can {
			continue
		}
		timeout := maxCancelWait
		if d := ps.Execution.Timeouts.RunTimeout.D; d > 0 && d < timeout {
			timeout = d
		}
		asks = append(asks, &pendingCall{runbookID: rb.ID, stepID: s.ID, attempt: inv.Attempt, handler: h, timeout: timeout,
			span: traceOf(rb).attemptSpan(attemptID(rb.ID, s.Key, inv.Attempt)),
			call: &Call{RunbookID: rb.ID, StepKey: s.Key, Verb: s.Verb, Attempt: inv.Attempt, Params: ps.Execution.Params,
				IdempotencyKey: s.IdempotencyKey, InvocationID: inv.InvocationID, CorrelationKey: inv.CorrelationKey,
				ExternalID: inv.ExternalID, Execution: ps.Execution}})
	}
	return asks, nil
}

// askToCancel asks the outside world to stop one wait's work and records
// the answer. Failures are recorded, never returned: the runbook is
// cancelled already.
func (e *Engine) askToCancel(ctx context.Context, a *pendingCall) {
	bg := context.WithoutCancel(ctx) // the cancellation committed: finish what follows from it
	callCtx, cancel := context.WithTimeout(trace.ContextWithSpanContext(bg, a.span), a.timeout)
	defer cancel()
	sent, err := a.handler.(Canceller).Cancel(callCtx, a.call)
	if !sent && err == nil {
		return // the verb names no way to cancel
	}
	typ, data := rbtype.EventInvocationCancelSent, any(InvocationCancelData{CorrelationKey: a.call.CorrelationKey})
	if err != nil {
		f := classify(err)
		typ = rbtype.EventInvocationCancelFailed
		data = InvocationCancelData{CorrelationKey: a.call.CorrelationKey, Code: f.Code, Message: f.Message}
	}
	step := &driver.Step{Key: a.call.StepKey, Attempt: a.attempt}
	ev, err := newEvent(a.runbookID, typ, e.workerID, step, data)
	if err == nil {
		err = e.store.InTx(bg, func(tx driver.Tx) error {
			return tx.ApplyChange(bg, driver.Change{RunbookID: a.runbookID, Events: []driver.Event{ev}})
		})
	}
	if err != nil {
		e.log.Warn("recording a cancel request to the outside world", append([]any{"runbook_id", a.runbookID, "step", a.call.StepKey,
			"err", err}, traceAttrs(a.span, uuid.Nil)...)...)
	}
}

// cancelRunbook is the change a cancellation makes: the invocations
// cancelled, the steps not yet final cancelled, their events, and the
// runbook finished as cancelled.
func cancelRunbook(now time.Time, worker string, rb *driver.Runbook, steps []*driver.Step, invs []driver.Invocation, by, note string) (driver.Change, error) {
	if !rb.Status.Running() {
		return driver.Change{}, fmt.Errorf("%w: runbook %s is already %s", ErrConflict, rb.ID, rb.Status)
	}
	c := driver.Change{RunbookID: rb.ID, FinishStatus: rbtype.InvocationCancelled}
	for _, inv := range invs {
		c.Finish = append(c.Finish, inv.InvocationID)
	}
	for _, s := range steps {
		if s.Status.Done() {
			continue
		}
		s.Status, s.FinishedAt, s.NextAttemptAt = rbtype.StepCancelled, &now, nil
		c.Steps = append(c.Steps, s.Change())
		ev, err := newEvent(rb.ID, rbtype.EventStepCancelled, worker, s, nil)
		if err != nil {
			return driver.Change{}, err
		}
		c.Events = append(c.Events, ev)
	}
	ev, err := newEvent(rb.ID, rbtype.EventRunbookCancelled, worker, nil, RunbookCancelledData{By: by, Note: note})
	if err != nil {
		return driver.Change{}, err
	}
	c.Events = append(c.Events, ev)
	status, code, msg := rbtype.RunbookCancelled, rbtype.CodeCancelled, "cancelled by "+by
	c.Runbook = &driver.RunbookChange{ID: rb.ID, Status: &status, ErrorCode: &code, ErrorMessage: &msg, Finished: true, SetWake: true,
		WakeAt: leasesEnd(steps)}
	return c, nil
}

// leasesEnd is when the last of the steps' leases expires, nil when none
// is held. A cancelled runbook is woken then, and not before: a call still
// out gives its lease up with its outcome, but a dead worker's lease ends
// only in an advance after it expired (no sweep looks for it).
func leasesEnd(steps []*driver.Step) *time.Time {
	var end *time.Time
	for _, s := range steps {
		if s.Lease != nil && (end == nil || s.Lease.ExpiresAt.After(*end)) {
			at := s.Lease.ExpiresAt
			end = &at
		}
	}
	return end
}
