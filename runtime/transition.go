package runtime

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/runtime/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// transition is one runbook's state inside one transaction, and everything
// the transaction must write. It holds the runbook's live steps (see
// durable's liveStepsSQL): a step of the plan that is not among them has
// completed. Its methods are the state machine of
// RUNTIME.md; they change steps in memory and record what changed. Nothing
// here talks to the database: advance.go loads the state and writes the
// changes.
type transition struct {
	engine *Engine
	now    time.Time
	rb     *durable.Runbook
	plan   *planInfo
	steps  []*durable.Step // in plan order
	byKey  map[string]*durable.Step
	byID   map[int64]*durable.Step
	inputs map[string]any

	invocations map[int64]*durable.Invocation // active, by step
	leases      map[int64]durable.Lease       // active, by step
	notes       map[string]durable.Notification

	// What the transaction writes.
	dirty             map[int64]bool
	completed         map[int64]bool
	events            []durable.Event
	runbook           *durable.RunbookChange
	finishInvocations map[string][]uuid.UUID // status → invocation ids
	processed         []int64                // notifications consumed
	receipts          []durable.Receipt
	newInvocations    []durable.Invocation
	invocationUpdates []durable.InvocationUpdate
	leaseRequests     []durable.LeaseRequest
	calls             []*pendingCall
	// readyEvent is where a step's STEP_READY stands in events, so that
	// starting it in the same transaction can drop it: STEP_STARTED says
	// as much, and the ledger stays minimal.
	readyEvent map[int64]int
	// data holds the arguments and results of steps not loaded (completed
	// ones), fetched as needed; see Engine.fillData.
	data map[string]durable.StepData
	// compensate lists completed steps to mark for compensation.
	compensate []string
}

func newTransition(e *Engine, now time.Time, rb *durable.Runbook, plan *planInfo, steps []*durable.Step) *transition {
	t := &transition{
		engine: e, now: now, rb: rb, plan: plan, steps: steps,
		byKey: make(map[string]*durable.Step, len(steps)), byID: make(map[int64]*durable.Step, len(steps)),
		invocations: map[int64]*durable.Invocation{}, leases: map[int64]durable.Lease{}, notes: map[string]durable.Notification{},
		dirty: map[int64]bool{}, completed: map[int64]bool{}, finishInvocations: map[string][]uuid.UUID{},
		readyEvent: map[int64]int{}, data: map[string]durable.StepData{},
	}
	for _, s := range steps {
		t.byKey[s.Key] = s
		t.byID[s.ID] = s
	}
	if v, err := decodeJSON(rb.Inputs); err == nil {
		t.inputs, _ = v.(map[string]any)
	}
	return t
}

// executing reports whether the runbook is still advancing its steps.
func (t *transition) executing() bool { return t.rb.Status == RunbookExecuting }

// touch marks a step as changed.
func (t *transition) touch(s *durable.Step) { t.dirty[s.ID] = true }

// event records an event for a step (nil for the runbook) with data.
func (t *transition) event(typ string, s *durable.Step, data map[string]any) {
	e := durable.Event{RunbookID: t.rb.ID, Type: typ, WorkerID: t.engine.workerID}
	if s != nil {
		e.StepKey, e.Attempt = s.Key, s.Attempt
	}
	if len(data) > 0 {
		e.Data, _ = json.Marshal(data) // event data holds only JSON values
	}
	t.events = append(t.events, e)
}

// readied records a step's STEP_READY.
func (t *transition) readied(s *durable.Step, data map[string]any) {
	t.readyEvent[s.ID] = len(t.events)
	t.event(EventStepReady, s, data)
}

// started drops the STEP_READY of a step that starts in the transaction
// that readied it.
func (t *transition) started(s *durable.Step) {
	if i, ok := t.readyEvent[s.ID]; ok {
		t.events[i].Type = ""
		delete(t.readyEvent, s.ID)
	}
	t.event(EventStepStarted, s, nil)
}

// ledger is the transaction's events, without the dropped ones.
func (t *transition) ledger() []durable.Event {
	out := t.events[:0:0]
	for _, e := range t.events {
		if e.Type != "" {
			out = append(out, e)
		}
	}
	return out
}

// execution is a step's frozen execution block.
func (t *transition) execution(s *durable.Step) verbs.Execution {
	if ps, ok := t.plan.steps[s.Key]; ok {
		return ps.Execution
	}
	return verbs.Execution{}
}

// finishInvocation ends a step's active invocation with a status.
func (t *transition) finishInvocation(s *durable.Step, status string) {
	inv, ok := t.invocations[s.ID]
	if !ok {
		return
	}
	t.finishInvocations[status] = append(t.finishInvocations[status], inv.InvocationID)
	delete(t.invocations, s.ID)
}

// complete records a step's success.
func (t *transition) complete(s *durable.Step, result json.RawMessage, simulated bool, data map[string]any) {
	s.Status, s.Result, s.Simulated = StepComplete, result, simulated
	s.ErrorCode, s.ErrorMessage, s.NextAttemptAt = "", "", nil
	s.FinishedAt = &t.now
	t.touch(s)
	t.completed[s.ID] = true
	if simulated {
		if data == nil {
			data = map[string]any{}
		}
		data["simulated"] = true
	}
	t.event(EventStepSucceeded, s, data)
}

// failStep records a failure: a retryable one with attempts left waits in
// failed_retryable for its backoff; anything else is final.
func (t *transition) failStep(s *durable.Step, e *Error) {
	exec := t.execution(s)
	s.ErrorCode, s.ErrorMessage = e.Code, e.Message
	t.touch(s)
	if e.Retryable() && s.Attempt < exec.Retry.MaxAttempts {
		delay := RetryDelay(exec.Retry, s.ID, s.Attempt)
		next := t.now.Add(delay)
		s.Status, s.NextAttemptAt = StepFailedRetryable, &next
		t.event(EventStepRetryScheduled, s, map[string]any{
			"code": e.Code, "message": e.Message, "next_attempt_at": next, "delay_ms": delay.Milliseconds(),
		})
		return
	}
	s.Status, s.NextAttemptAt, s.FinishedAt = StepFailed, nil, &t.now
	t.finishInvocation(s, "cancelled")
	t.event(EventStepFailed, s, map[string]any{"code": e.Code, "message": e.Message})
}

// applyOutcome records what a handler call of this worker came back with.
// The caller has checked that the worker still held the step's lease for
// the attempt; a step that changed meanwhile (cancelled, say) keeps its
// new state and the outcome is dropped.
func (t *transition) applyOutcome(o *outcome) {
	s := t.byID[o.stepID]
	if s == nil {
		return
	}
	if o.compensation {
		t.applyCompensation(s, o)
		return
	}
	if s.Status != StepRunning || s.Attempt != o.attempt || !t.executing() {
		return
	}
	if o.err != nil {
		t.failStep(s, o.err)
		return
	}
	if o.result.IsParked() {
		t.park(s, o)
		return
	}
	if err := t.checkOutput(s, o.value); err != nil {
		t.failStep(s, err)
		return
	}
	if !o.dryRun && !o.simulated && t.execution(s).SideEffects != rbtype.SideEffectsNone {
		t.receipts = append(t.receipts, durable.Receipt{
			Handler: t.execution(s).Handler, IdempotencyKey: s.IdempotencyKey, RunbookID: t.rb.ID,
			StepKey: s.Key, Result: o.value, ResultHash: hashJSON(o.value),
		})
	}
	t.complete(s, o.value, o.dryRun || o.simulated, nil)
}

// checkOutput validates a result against the verb's output_schema, so that
// what dependents read is what the verb promised.
func (t *transition) checkOutput(s *durable.Step, value json.RawMessage) *Error {
	info, ok := t.plan.plan.Verbs[s.Verb]
	if !ok || info.OutputSchema == nil {
		return nil
	}
	v, err := decodeJSON(value)
	if err != nil {
		return Errorf(CodeSchemaValidationFailed, "the result is not JSON: %v", err)
	}
	if err := info.OutputSchema.Validate(v); err != nil {
		return Errorf(CodeSchemaValidationFailed, "the result does not match %s's output_schema: %v", s.Verb, err)
	}
	return nil
}

// park records a durable step's park (steps 4 of RUNTIME.md): the external
// id, the step parked, and, if its notification came first, its immediate
// resumption.
func (t *transition) park(s *durable.Step, o *outcome) {
	inv, ok := t.invocations[s.ID]
	if !ok {
		t.failStep(s, Errorf(CodeInternal, "the step parked without an active invocation"))
		return
	}
	update := durable.InvocationUpdate{ID: inv.InvocationID, ExternalID: o.result.externalID}
	if o.result.until != nil {
		// A timer resumes itself at until, or times out first at its
		// park_timeout.
		until := *o.result.until
		if until.Before(inv.TimeoutAt) {
			inv.TimeoutAt = until
			update.TimeoutAt = &until
		}
		update.Context, _ = json.Marshal(map[string]any{"timer_until": until})
		inv.Context = update.Context
	}
	t.invocationUpdates = append(t.invocationUpdates, update)
	s.Status = StepParked
	t.touch(s)
	t.event(EventStepParked, s, map[string]any{"correlation_key": inv.CorrelationKey, "timeout_at": inv.TimeoutAt})
}

// consumeNotifications resumes parked steps whose notification is in the
// inbox.
func (t *transition) consumeNotifications() {
	for _, s := range t.steps {
		if s.Status != StepParked {
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
		t.engine.metrics.resumed(t.now.Sub(n.ReceivedAt))
		t.finishInvocation(s, "completed")
		t.event(EventStepResumed, s, map[string]any{"correlation_key": inv.CorrelationKey, "outcome": n.Outcome})
		if n.Outcome == "failed" {
			code := n.ErrorCode
			if code == "" {
				code = CodeInternal
			}
			t.failStep(s, &Error{Code: code, Message: n.ErrorMessage})
			continue
		}
		result := n.Result
		if len(result) == 0 || string(result) == "null" {
			result = json.RawMessage(`{}`)
		}
		if err := t.checkOutput(s, result); err != nil {
			t.failStep(s, err)
			continue
		}
		if t.execution(s).SideEffects != rbtype.SideEffectsNone {
			t.receipts = append(t.receipts, durable.Receipt{
				Handler: t.execution(s).Handler, IdempotencyKey: s.IdempotencyKey, RunbookID: t.rb.ID,
				StepKey: s.Key, Result: result, ResultHash: hashJSON(result),
			})
		}
		t.complete(s, result, false, nil)
	}
}

// timeouts ends parks past their timeout: a timer completes, anything else
// fails or escalates as its verb's on_timeout says.
func (t *transition) timeouts() {
	for _, s := range t.steps {
		if s.Status != StepParked {
			continue
		}
		inv, ok := t.invocations[s.ID]
		if !ok || inv.TimeoutAt.After(t.now) {
			continue
		}
		if until, ok := timerUntil(inv); ok && !until.After(t.now) {
			t.finishInvocation(s, "completed")
			t.event(EventStepResumed, s, map[string]any{"correlation_key": inv.CorrelationKey, "timer": true})
			result, _ := json.Marshal(map[string]any{"slept_until": until})
			t.complete(s, result, false, nil)
			continue
		}
		exec := t.execution(s)
		t.finishInvocation(s, "timed_out")
		t.event(EventStepTimedOut, s, map[string]any{
			"correlation_key": inv.CorrelationKey, "timeout_at": inv.TimeoutAt, "on_timeout": exec.Timeouts.OnTimeout,
		})
		if exec.Timeouts.OnTimeout == rbtype.OnTimeoutEscalate {
			s.Status, s.FinishedAt = StepEscalated, &t.now
			s.ErrorCode, s.ErrorMessage = CodeParkTimeout, "no notification before the park timeout; escalated to a person"
			t.touch(s)
			continue
		}
		s.ErrorCode, s.ErrorMessage = CodeParkTimeout, "no notification before the park timeout"
		s.Status, s.FinishedAt = StepFailed, &t.now
		t.touch(s)
		t.event(EventStepFailed, s, map[string]any{"code": CodeParkTimeout, "message": s.ErrorMessage})
	}
}

func timerUntil(inv *durable.Invocation) (time.Time, bool) {
	var c struct {
		TimerUntil *time.Time `json:"timer_until"`
	}
	if json.Unmarshal(inv.Context, &c) != nil || c.TimerUntil == nil {
		return time.Time{}, false
	}
	return *c.TimerUntil, true
}

// reclaim puts back to ready the running steps no worker holds: their
// lease expired (the worker died) or was released at a shutdown. They run
// again with the same idempotency key; a durable step reuses its
// invocation, so the external system sees the same correlation key.
func (t *transition) reclaim() {
	for _, s := range t.steps {
		if s.Status != StepRunning {
			continue
		}
		if _, held := t.leases[s.ID]; held {
			continue
		}
		s.Status = StepReady
		t.touch(s)
		t.engine.metrics.leaseReclaimed()
		t.readied(s, map[string]any{"reclaimed": true})
	}
	if t.rb.Status == RunbookFailed {
		for _, s := range t.steps {
			if s.CompensationStatus == compensationRunning {
				if _, held := t.leases[s.ID]; !held {
					s.CompensationStatus = compensationPending
					t.touch(s)
				}
			}
		}
	}
}

// retries makes due retries ready.
func (t *transition) retries() {
	for _, s := range t.steps {
		if s.Status == StepFailedRetryable && s.NextAttemptAt != nil && !s.NextAttemptAt.After(t.now) {
			s.Status, s.NextAttemptAt = StepReady, nil
			t.touch(s)
			t.readied(s, map[string]any{"retry": true})
		}
	}
}

// propagate makes pending steps ready when every predecessor completed,
// and skips them when one never will. Steps are in plan order, which is
// topological, so a skip cascades in one pass.
func (t *transition) propagate() {
	for _, s := range t.steps {
		if s.Status != StepPending {
			continue
		}
		ready, blocked := true, ""
		for _, p := range t.plan.preds[s.Key] {
			ps := t.byKey[p]
			if ps == nil {
				continue // not live: complete
			}
			if blocksDependents(ps.Status) {
				blocked = p
				break
			}
			if ps.Status != StepComplete {
				ready = false
			}
		}
		switch {
		case blocked != "":
			s.Status, s.FinishedAt = StepSkipped, &t.now
			t.touch(s)
			t.event(EventStepSkipped, s, map[string]any{"because": blocked, "status": t.byKey[blocked].Status})
		case ready:
			s.Status = StepReady
			t.touch(s)
			t.readied(s, nil)
		}
	}
}

// gates holds ready steps that need an approval they do not have. Only
// that step waits; other branches go on.
func (t *transition) gates() {
	for _, s := range t.steps {
		if s.Status != StepReady || s.Gate == string(rbtype.GateNone) || s.GateDecision == "approved" {
			continue
		}
		if t.rb.Mode == ModeDryRun {
			continue // a dry run previews; it does not wait for people
		}
		s.Status = StepWaitingApproval
		t.touch(s)
		t.event(EventGateRequested, s, map[string]any{"gate": s.Gate})
	}
}

// settle ends the runbook when every step is final: failed if any failed
// (its compensations then run), escalated if any escalated, complete
// otherwise.
func (t *transition) settle() {
	if !t.executing() {
		return
	}
	var failed, escalated []string
	for _, s := range t.steps {
		if !stepDone(s.Status) {
			return
		}
		switch s.Status {
		case StepFailed:
			failed = append(failed, s.Key)
		case StepEscalated:
			escalated = append(escalated, s.Key)
		}
	}
	status, event := RunbookComplete, EventRunbookCompleted
	data := map[string]any{}
	switch {
	case len(failed) > 0:
		status, event = RunbookFailed, EventRunbookFailed
		data["failed_steps"] = failed
		first := t.byKey[failed[0]]
		compensating := t.scheduleCompensations()
		t.setRunbook(status, first.ErrorCode, first.ErrorMessage)
		t.runbook.Finished = !compensating
	case len(escalated) > 0:
		status, event = RunbookEscalated, EventRunbookEscalated
		data["escalated_steps"] = escalated
		t.setRunbook(status, CodeParkTimeout, "escalated to a person")
	default:
		t.setRunbook(status, "", "")
	}
	t.rb.Status = status
	t.event(event, nil, data)
}

func (t *transition) setRunbook(status, code, message string) {
	c := t.runbookChange()
	c.Status = &status
	if code != "" {
		c.ErrorCode, c.ErrorMessage = &code, &message
	}
	c.Finished = true // a failing runbook with compensations to run clears this
}

func (t *transition) runbookChange() *durable.RunbookChange {
	if t.runbook == nil {
		t.runbook = &durable.RunbookChange{ID: t.rb.ID}
	}
	return t.runbook
}

// nextWake is when the runbook needs a worker again: now if a step can
// start; else the earliest retry or park timeout; else never (only the
// outside world can move it). Lease expiries are left to the lease sweep:
// keeping them here would rewrite the runbook row, and its wake_at index,
// in every transaction of a busy runbook, for the rare worker that dies.
func (t *transition) nextWake() *time.Time {
	var next *time.Time
	consider := func(at time.Time) {
		if next == nil || at.Before(*next) {
			at := at
			next = &at
		}
	}
	if t.executing() {
		for _, s := range t.steps {
			switch s.Status {
			case StepReady:
				consider(t.now)
			case StepFailedRetryable:
				if s.NextAttemptAt != nil {
					consider(*s.NextAttemptAt)
				}
			case StepParked:
				if inv, ok := t.invocations[s.ID]; ok {
					consider(inv.TimeoutAt)
				}
			}
		}
	}
	if t.rb.Status == RunbookFailed {
		if len(t.compensate) > 0 {
			consider(t.now) // just marked: the next transaction starts them
		}
		for _, s := range t.steps {
			if s.CompensationStatus == compensationPending {
				consider(t.now)
			}
		}
	}
	return next
}

// wakeChanged reports whether next differs from the stored wake-up, to
// microseconds, which is what the database keeps.
func (t *transition) wakeChanged(next *time.Time) bool {
	old := t.rb.WakeAt
	if old == nil || next == nil {
		return (old == nil) != (next == nil)
	}
	return !old.Truncate(time.Microsecond).Equal(next.Truncate(time.Microsecond))
}
