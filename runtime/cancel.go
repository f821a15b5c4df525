package runtime

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// CancelOptions says who cancels and whether the cancellation undoes what
// the runbook did.
type CancelOptions struct {
	By string
	// Compensate runs the compensations of the steps that completed, in
	// reverse order of completion, as a failure does (docs/design/language.md
	// v1.2: a cancel undoes). False leaves what they did as it is.
	Compensate bool
}

// Cancel stops a runbook and undoes what its completed steps did: CancelWith
// with Compensate.
func (e *Engine) Cancel(ctx context.Context, runbookID uuid.UUID, by string) error {
	return e.CancelWith(ctx, runbookID, CancelOptions{By: by, Compensate: true})
}

// CancelWith stops a runbook: its active invocations are cancelled, every
// step not yet final is cancelled, and later notifications for it are kept
// and ignored. Completed work stays readable; with o.Compensate, the
// completed steps whose verbs declare a compensation are undone, newest
// first, and the runbook finishes once they have run. Cancelling a
// cancelled runbook is a no-op; a finished one is a conflict.
//
// Once that has committed, each cancelled wait whose handler can ask the
// outside world to stop (a Canceller: http.start with params.cancel_url)
// is asked, best effort, and the answer recorded as
// INVOCATION_CANCEL_SENT or INVOCATION_CANCEL_FAILED. A daemon that dies
// in between does not ask: the runbook is cancelled either way, and later
// notifications for it are ignored.
func (e *Engine) CancelWith(ctx context.Context, runbookID uuid.UUID, o CancelOptions) error {
	by, note := actorOf(ctx, o.By)
	c := &machine.CancelRunbook{By: by, Note: note, Compensate: o.Compensate}
	if err := e.runCommand(ctx, runbookID, c); err != nil || c.Rb == nil {
		return err // refused, or cancelled already
	}
	for _, a := range e.cancelAsks(c.Rb, c.Plan, c.Steps, c.Waits) {
		e.askToCancel(ctx, a)
	}
	return nil
}

// askToStopAborted asks, as a cancel does, the outside world to stop the
// waits an abort cancelled (a final failure under on_failure: abort, or a
// budget stop): each in its own goroutine, counted with the calls in
// flight so that a shutdown waits for it, since the advance that called
// this holds a worker slot.
func (e *Engine) askToStopAborted(ctx context.Context, rb *driver.Runbook, plan *machine.PlanInfo, steps []*driver.Step, waits []driver.Invocation) {
	for _, a := range e.cancelAsks(rb, plan, steps, waits) {
		e.inflight.add()
		go func() {
			defer e.inflight.done()
			e.askToCancel(ctx, a)
		}()
	}
}

// maxCancelWait bounds one request asking the outside world to stop.
const maxCancelWait = 10 * time.Second

// cancelAsks lists the cancelled waits whose handlers can ask the outside
// world to stop, each as the call to make.
func (e *Engine) cancelAsks(rb *driver.Runbook, plan *machine.PlanInfo, steps []*driver.Step, invs []driver.Invocation) []*machine.PendingCall {
	if len(invs) == 0 || plan == nil {
		return nil
	}
	byID := map[int64]*driver.Step{}
	for _, s := range steps {
		byID[s.ID] = s
	}
	var asks []*machine.PendingCall
	for _, inv := range invs {
		s := byID[inv.StepID]
		if s == nil {
			continue
		}
		ps, ok := plan.Steps[s.Key]
		if !ok {
			continue
		}
		h, ok := e.handlers.lookup(ps.Execution.Handler)
		if _, can := h.(handler.Canceller); !ok || !can {
			continue
		}
		timeout := maxCancelWait
		if d := ps.Execution.Timeouts.RunTimeout.D; d > 0 && d < timeout {
			timeout = d
		}
		asks = append(asks, &machine.PendingCall{RunbookID: rb.ID, StepID: s.ID, Attempt: inv.Attempt, Handler: h, Timeout: timeout,
			Span: machine.TraceOf(rb).AttemptSpan(machine.AttemptID(rb.ID, s.Key, inv.Attempt)),
			Call: &handler.Call{RunbookID: rb.ID, StepKey: s.Key, Verb: s.Verb, Attempt: inv.Attempt, Params: ps.Execution.Params,
				IdempotencyKey: s.IdempotencyKey, InvocationID: inv.InvocationID, CorrelationKey: inv.CorrelationKey,
				ExternalID: inv.ExternalID, Execution: ps.Execution}})
	}
	return asks
}

// askToCancel asks the outside world to stop one wait's work and records
// the answer. Failures are recorded, never returned: the runbook is
// cancelled already.
func (e *Engine) askToCancel(ctx context.Context, a *machine.PendingCall) {
	bg := context.WithoutCancel(ctx) // the cancellation committed: finish what follows from it
	callCtx, cancel := context.WithTimeout(trace.ContextWithSpanContext(bg, a.Span), a.Timeout)
	defer cancel()
	sent, err := a.Handler.(handler.Canceller).Cancel(callCtx, a.Call)
	if !sent && err == nil {
		return // the verb names no way to cancel
	}
	typ, data := rbtype.EventInvocationCancelSent, any(machine.InvocationCancelData{CorrelationKey: a.Call.CorrelationKey})
	if err != nil {
		f := handler.Classify(err)
		typ = rbtype.EventInvocationCancelFailed
		data = machine.InvocationCancelData{CorrelationKey: a.Call.CorrelationKey, Code: f.Code, Message: f.Message}
	}
	err = e.runCommand(bg, a.RunbookID, &machine.RecordCancelAsk{Step: a.Call.StepKey, Attempt: a.Attempt, Typ: typ, Data: data})
	if err != nil {
		e.log.Warn("recording a cancel request to the outside world", append([]any{"runbook_id", a.RunbookID, "step", a.Call.StepKey,
			"err", err}, machine.TraceAttrs(a.Span, uuid.Nil)...)...)
	}
}
