package machine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// transition is one runbook's state inside one transaction, and everything
// the transaction must write. It holds the runbook's live steps (see
// durable's liveStepsSQL): a step of the plan that is not among them has
// completed. Its methods are the state machine of
// docs/design/runtime.md; they change steps in memory and record what changed. Nothing
// here talks to the database: advance.go loads the state and writes the
// changes.
type transition struct {
	m      *Machine
	Now    time.Time
	Rb     *rbtype.Runbook
	plan   *PlanInfo
	Steps  []*rbtype.Step // in plan order
	byKey  map[string]*rbtype.Step
	byID   map[int64]*rbtype.Step
	inputs map[string]any

	invocations map[int64]*rbtype.Invocation // active, by step
	leases      map[int64]rbtype.Lease       // active, by step
	notes       map[string]rbtype.Notification

	// What the transaction writes.
	Dirty     map[int64]bool
	mutations []rbtype.Mutation
	// newSteps and newEdges are an extension's (extend.go); the steps
	// take part in the next round, once stored.
	newSteps          []rbtype.NewStep
	newEdges          []rbtype.Edge
	completed         map[int64]bool
	events            []rbtype.Event
	Runbook           *rbtype.RunbookChange
	finishInvocations map[rbtype.InvocationStatus][]uuid.UUID
	processed         []int64 // notifications consumed
	receipts          []rbtype.Receipt
	cacheWrites       []rbtype.CacheEntry
	attempts          []rbtype.Attempt
	// outcomes are the outcomes steps produced (outcome.go), and
	// arguments the arguments kept when a step started again with others.
	outcomes  []rbtype.Outcome
	arguments []rbtype.Arguments
	// argsHash and usage are, by step, the hash of the arguments its
	// attempt started with and what its attempt used, when this
	// transaction knows them: for the ledger and the outcome.
	argsHash map[int64]string
	usage    map[int64]rbtype.Usage
	// attemptAt is where an attempt stands in attempts, by id, so that a
	// park and its resume in one transaction make one row without a scan.
	attemptAt         map[uuid.UUID]int
	newInvocations    []rbtype.Invocation
	invocationUpdates []rbtype.InvocationUpdate
	leaseRequests     []rbtype.LeaseRequest
	calls             []*PendingCall
	// inlined counts the steps called inside this transaction (inline.go).
	inlined int
	// readyEvent is where a step's STEP_READY stands in events, so that
	// starting it in the same transaction can drop it: STEP_STARTED says
	// as much, and the ledger stays minimal.
	readyEvent map[int64]int
	// data holds the arguments and results of steps not loaded (completed
	// ones), fetched as needed; see Engine.fillData.
	data map[string]rbtype.StepData
	// compensate lists completed steps to mark for compensation.
	compensate []string
	// trace is the runbook's trace context, once worked out; parks and
	// spans are the attempts' spans to emit after the commit, collected
	// only when spans are emitted (spans.go).
	trace *runbookTrace
	parks map[int64]*parkWait
	Spans []FinishedAttempt
	// err is the first error met building what to write (an event whose
	// data does not encode); the transaction is abandoned with it.
	err error
	// book is the round's budgets (budget.go); nil checks none.
	book *BudgetBook

	// Grown is the plan as this round's expansions grew it, written with
	// their steps (loops.go); nil when nothing was expanded.
	Grown *PlanInfo
	// condDue are the pending steps whose predecessors have all ended and
	// whose conditions are to be decided, once their data is in hand
	// (conditions.go).
	condDue []*rbtype.Step
	// flight caches, for each loop with :parallel, its elements in
	// flight, while one pass of propagate runs.
	flight map[string]map[int]bool
	// later: something this round could not finish waits for data the
	// next round reads (a condition, a template's results): it is due
	// at once.
	later bool
}

func newTransition(m *Machine, now time.Time, rb *rbtype.Runbook, plan *PlanInfo, steps []*rbtype.Step) *transition {
	t := &transition{
		m: m, Now: now, Rb: rb, plan: plan, Steps: steps,
		byKey: make(map[string]*rbtype.Step, len(steps)), byID: make(map[int64]*rbtype.Step, len(steps)),
		invocations: map[int64]*rbtype.Invocation{}, leases: map[int64]rbtype.Lease{}, notes: map[string]rbtype.Notification{},
		Dirty: map[int64]bool{}, completed: map[int64]bool{}, finishInvocations: map[rbtype.InvocationStatus][]uuid.UUID{},
		readyEvent: map[int64]int{}, data: map[string]rbtype.StepData{},
		argsHash: map[int64]string{}, usage: map[int64]rbtype.Usage{},
	}
	for _, s := range steps {
		t.byKey[s.Key] = s
		t.byID[s.ID] = s
	}
	if v, err := rbtype.DecodeJSON(rb.Inputs); err == nil {
		t.inputs, _ = v.(map[string]any)
	}
	return t
}

// executing reports whether the runbook is still advancing its steps: it
// runs, or it has ended and runs its failure hooks (hooks.go).
func (t *transition) executing() bool { return t.Rb.Status.Running() || t.hooking() }

// touch marks a step as changed.
func (t *transition) touch(s *rbtype.Step) { t.Dirty[s.ID] = true }

// event records an event for a step (nil for the runbook) with its data
// (nil, or one of the *Data types of events.go).
func (t *transition) event(typ rbtype.EventType, s *rbtype.Step, data any) {
	if s != nil && t.plan != nil && t.plan.IsHook(s.Key) {
		typ = hookEvent(typ)
	}
	e, err := NewEvent(t.Rb.ID, typ, t.m.Worker, s, data)
	if err != nil && t.err == nil {
		t.err = err
	}
	t.events = append(t.events, e)
}

// NewEvent makes an event for a step (nil for the runbook). Data that
// encodes to an empty object is left out.
func NewEvent(runbookID uuid.UUID, typ rbtype.EventType, worker string, s *rbtype.Step, data any) (rbtype.Event, error) {
	e := rbtype.Event{RunbookID: runbookID, Type: typ, WorkerID: worker}
	if s != nil {
		e.StepKey, e.Attempt = s.Key, s.Attempt
	}
	if data == nil {
		return e, nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return e, fmt.Errorf("the data of a %s event does not encode: %w", typ, err)
	}
	if string(b) != "{}" {
		e.Data = b
	}
	return e, nil
}

// readied records a step's STEP_READY.
func (t *transition) readied(s *rbtype.Step, data *StepReadyData) {
	t.readyEvent[s.ID] = len(t.events)
	if data == nil {
		t.event(rbtype.EventStepReady, s, nil)
		return
	}
	t.event(rbtype.EventStepReady, s, data)
}

// started drops the STEP_READY of a step that starts in the transaction
// that readied it.
func (t *transition) started(s *rbtype.Step) {
	if i, ok := t.readyEvent[s.ID]; ok {
		t.events[i].Type = ""
		delete(t.readyEvent, s.ID)
	}
	t.event(rbtype.EventStepStarted, s, nil)
}

// ledger is the transaction's events, without the dropped ones.
func (t *transition) ledger() []rbtype.Event {
	out := t.events[:0:0]
	for _, e := range t.events {
		if e.Type != "" {
			out = append(out, e)
		}
	}
	return out
}

// execution is a step's frozen execution block.
func (t *transition) execution(s *rbtype.Step) verbs.Execution {
	if ps, ok := t.plan.Steps[s.Key]; ok {
		return ps.Execution
	}
	return verbs.Execution{}
}

// finishInvocation ends a step's active invocation with a status.
func (t *transition) finishInvocation(s *rbtype.Step, status rbtype.InvocationStatus) {
	inv, ok := t.invocations[s.ID]
	if !ok {
		return
	}
	t.finishInvocations[status] = append(t.finishInvocations[status], inv.InvocationID)
	delete(t.invocations, s.ID)
}

// complete records a step's success.
func (t *transition) complete(s *rbtype.Step, result json.RawMessage, simulated bool, data StepSucceededData) {
	if !simulated {
		// The lists this step produces are checked before it completes:
		// one that cannot be expanded fails it instead.
		if err := t.checkProducedLists(s, result); err != nil {
			t.failStep(s, err)
			return
		}
	}
	t.moveStep(s, rbtype.StepComplete)
	s.Result, s.Simulated = result, simulated
	s.ErrorCode, s.ErrorMessage, s.NextAttemptAt = "", "", nil
	s.FinishedAt = &t.Now
	t.touch(s)
	t.completed[s.ID] = true
	data.Simulated = simulated
	t.event(rbtype.EventStepSucceeded, s, data)
	if i, ok := t.attemptAt[AttemptID(t.Rb.ID, s.Key, s.Attempt)]; ok && !simulated {
		t.attempts[i].ResultHash = HashJSON(result)
	}
	if !simulated && !t.plan.IsTemplate(s.Key) {
		t.produce(s, result) // a template produced nothing itself: its instances did
	}
}

// failStep records a failure: a retryable one with attempts left waits in
// failed_retryable for its backoff; anything else is final.
func (t *transition) failStep(s *rbtype.Step, e *handler.Error) {
	exec := t.execution(s)
	s.ErrorCode, s.ErrorMessage = e.Code, e.Message
	t.touch(s)
	notRetried := ""
	if d := t.decideRetry(s, e, &exec); d.retry {
		next := t.Now.Add(d.delay)
		t.moveStep(s, rbtype.StepFailedRetryable)
		s.NextAttemptAt = &next
		t.event(rbtype.EventStepRetryScheduled, s, RetryScheduledData{
			Code: e.Code, Message: e.Message, NextAttemptAt: next, DelayMS: d.delay.Milliseconds(),
			RetryAfterMS: d.retryAfter.Milliseconds(),
		})
		return
	} else if d.why == FinalNoKey {
		notRetried = d.why
	}
	t.moveStep(s, rbtype.StepFailed)
	s.NextAttemptAt, s.FinishedAt = nil, &t.Now
	t.finishInvocation(s, rbtype.InvocationCancelled)
	t.event(rbtype.EventStepFailed, s, StepFailedData{Code: e.Code, Message: e.Message, NotRetried: notRetried})
	t.failed(s)
}

// failed applies a final failure's mode (docs/design/semantics.md section 5). Under
// abort the runbook stops: what has not started is skipped, what waits on
// the outside world is cancelled, and calls in flight are recorded when
// they return. Under isolate and continue only the step's dependents are
// concerned, which propagate decides.
func (t *transition) failed(s *rbtype.Step) {
	if t.plan == nil || t.plan.onFailure(s.Key) != rbtype.OnFailureAbort || t.isHookStep(s) {
		return // a failed hook triggers nothing
	}
	for _, o := range t.Steps {
		if t.isHookStep(o) {
			continue // hooks run once the runbook has ended
		}
		switch abortsTo(o) {
		case rbtype.StepSkipped:
			t.moveStep(o, rbtype.StepSkipped)
			o.NextAttemptAt, o.FinishedAt = nil, &t.Now
			t.touch(o)
			t.event(rbtype.EventStepSkipped, o, StepSkippedData{Because: s.Key, Status: s.Status, Aborted: true})
		case rbtype.StepCancelled:
			t.cancelAborted(o, s)
		}
	}
}

// abortsTo is what an abort makes of a step: a step that has not started
// (or waits to start again) is skipped, a park is cancelled; anything else
// keeps its status (a running call is recorded when it returns). It
// returns "" for those.
func abortsTo(o *rbtype.Step) rbtype.StepStatus {
	switch o.Status {
	case rbtype.StepPending, rbtype.StepReady, rbtype.StepWaitingApproval, rbtype.StepFailedRetryable:
		return rbtype.StepSkipped
	case rbtype.StepParked:
		return rbtype.StepCancelled
	}
	return ""
}

// cancelAborted cancels a step the runbook's abort leaves nothing to do
// for: a park (its invocation is cancelled; a later notification is kept
// and ignored) or a call whose worker died.
func (t *transition) cancelAborted(o, failed *rbtype.Step) {
	t.finishInvocation(o, rbtype.InvocationCancelled)
	t.moveStep(o, rbtype.StepCancelled)
	o.FinishedAt = &t.Now
	t.touch(o)
	t.event(rbtype.EventStepCancelled, o, StepSkippedData{Because: failed.Key, Status: failed.Status, Aborted: true})
}

// aborted reports whether a step failed for good under on_failure: abort:
// then nothing new starts, and no failure is retried.
func (t *transition) aborted() bool { return t.abortedBy() != nil }

// abortedBy is the step whose failure aborted the runbook, or nil.
func (t *transition) abortedBy() *rbtype.Step {
	if t.plan == nil || t.hooking() {
		return nil // the abort is over: hooks retry and run again as any step
	}
	for _, s := range t.Steps {
		if s.Status == rbtype.StepFailed && t.plan.onFailure(s.Key) == rbtype.OnFailureAbort && !t.isHookStep(s) {
			return s
		}
	}
	return nil
}

// applyOutcome records what a handler call of this worker came back with.
// The caller has checked that the worker still held the step's lease for
// the attempt; a step that changed meanwhile (cancelled, say) keeps its
// new state and the outcome is dropped.
func (t *transition) applyOutcome(o *Outcome) {
	s := t.byID[o.StepID]
	if s == nil {
		return
	}
	switch o.Purpose {
	case CallCompensation:
		t.applyCompensation(s, o)
		return
	case callEscalation:
		t.applyEscalation(s, o)
		return
	}
	if s.Status != rbtype.StepRunning || s.Attempt != o.Attempt || !t.executing() {
		return
	}
	if o.ArgsHash != "" {
		t.argsHash[s.ID] = o.ArgsHash
	}
	t.recordRehearsal(s, o.Rehearsed)
	t.recordOutcome(s, o)
	if o.Err != nil {
		t.failStep(s, o.Err)
		return
	}
	if o.Result.IsParked() {
		t.park(s, o)
		return
	}
	if err := t.checkOutput(s, o.Value); err != nil {
		t.failStep(s, err)
		return
	}
	exec := t.execution(s)
	if !o.DryRun && !o.simulated && exec.SideEffects != rbtype.SideEffectsNone {
		t.receipts = append(t.receipts, rbtype.Receipt{
			Handler: exec.Handler, IdempotencyKey: s.IdempotencyKey, RunbookID: t.Rb.ID, Scope: exec.Idempotency.Scope,
			StepKey: s.Key, Result: o.Value, ResultHash: HashJSON(o.Value),
		})
	}
	t.storeInCache(s, o, &exec)
	t.complete(s, o.Value, o.DryRun || o.simulated, StepSucceededData{})
}

// checkOutput validates a result against the verb's output_schema, so that
// what dependents read is what the verb promised.
func (t *transition) checkOutput(s *rbtype.Step, value json.RawMessage) *handler.Error {
	info, ok := t.plan.Plan.Verbs[s.Verb]
	if !ok || info.OutputSchema == nil {
		return nil
	}
	v, err := rbtype.DecodeJSON(value)
	if err != nil {
		return handler.Errorf(rbtype.CodeSchemaValidationFailed, "the result is not JSON: %v", err)
	}
	if err := info.OutputSchema.Validate(v); err != nil {
		return handler.Errorf(rbtype.CodeSchemaValidationFailed, "the result does not match %s's output_schema: %v", s.Verb, err)
	}
	return nil
}

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
// inbox.
func (t *transition) consumeNotifications() {
	for _, s := range t.Steps {
		if s.Status != rbtype.StepParked {
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

// timeouts ends parks past their timeout: a timer completes, anything else
// fails or escalates as its verb's on_timeout says.
func (t *transition) timeouts() {
	for _, s := range t.Steps {
		if s.Status != rbtype.StepParked {
			continue
		}
		inv, ok := t.invocations[s.ID]
		if !ok || inv.TimeoutAt.After(t.Now) {
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

func TimerUntil(inv *rbtype.Invocation) (time.Time, bool) {
	var c timerContext
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
	for _, s := range t.Steps {
		if s.Status != rbtype.StepRunning {
			continue
		}
		if _, held := t.leases[s.ID]; held {
			continue
		}
		if failed := t.abortedBy(); failed != nil {
			// Its worker died and the runbook is aborting: nothing new
			// starts, so the call is not made again.
			t.cancelAborted(s, failed)
			continue
		}
		t.moveStep(s, rbtype.StepReady)
		t.touch(s)
		t.m.Observe.LeaseReclaimed()
		t.event(rbtype.EventStepReclaimed, s, StepReclaimedData{SuspectCommit: t.execution(s).SideEffects == rbtype.SideEffectsExternalCall})
		t.readied(s, &StepReadyData{Reclaimed: true})
	}
	if t.Rb.Status.Compensates() {
		for _, s := range t.Steps {
			if s.CompensationStatus == rbtype.CompensationRunning {
				if _, held := t.leases[s.ID]; !held {
					s.CompensationStatus = rbtype.CompensationPending
					t.touch(s)
				}
			}
		}
	}
	for _, s := range t.Steps {
		if s.EscalationStatus == rbtype.CompensationRunning {
			if _, held := t.leases[s.ID]; !held {
				s.EscalationStatus = rbtype.CompensationPending
				t.touch(s)
			}
		}
	}
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

// propagate makes pending steps ready when every predecessor completed,
// and skips them when one never will. Steps are in plan order, which is
// topological, so a skip cascades in one pass. A skipped predecessor
// whose skip was quiet (a false condition, and what it skips downstream)
// counts as ended for a step that only runs after it (:after) and skips
// one that reads it (UPSTREAM_SKIPPED). A step with a condition whose
// predecessors have ended waits in condDue for its data, and is decided
// in the same round (conditions.go). A template never becomes ready
// (loops.go), a hook only while the hooks run (hooks.go), and :parallel
// holds an element's first step back while its loop has as many in
// flight as it allows.
func (t *transition) propagate() {
	hooking := t.hooking()
	t.flight, t.condDue = nil, nil
	for _, s := range t.Steps {
		if s.Status != rbtype.StepPending || t.plan.IsTemplate(s.Key) || t.isHookStep(s) != hooking {
			continue
		}
		ready, blocked, quiet := true, "", ""
		for _, p := range t.plan.preds[s.Key] {
			ps := t.byKey[p]
			if ps == nil {
				continue // not live: complete
			}
			if ps.Status == rbtype.StepFailed && t.plan.onFailure(p) == rbtype.OnFailureContinue && !t.plan.readsResult(s.Key, p) {
				continue // an accepted failure: a step joined only by :after runs
			}
			if ps.Status == rbtype.StepSkipped && ps.ErrorCode.SkipsQuietly() {
				if t.plan.readsResult(s.Key, p) && quiet == "" {
					quiet = p
				}
				continue
			}
			if ps.Status.BlocksDependents() {
				blocked = p
				break
			}
			if ps.Status != rbtype.StepComplete {
				ready = false
			}
		}
		switch {
		case blocked != "" && t.draftOnly(s):
			// Skipped either way; DRAFT_ONLY says what running the draft
			// for real would run.
			t.skipDraft(s)
		case blocked != "":
			t.skipAfter(s, blocked)
		case quiet != "":
			t.skipAfter(s, quiet)
		case !ready || t.holdsBack(s):
		case t.plan.Steps[s.Key] != nil && t.plan.Steps[s.Key].When != nil:
			t.condDue = append(t.condDue, s)
		default:
			t.makeReady(s)
		}
	}
}

// makeReady makes a pending step ready, or skips it in a draft_only
// runbook that does not run it.
func (t *transition) makeReady(s *rbtype.Step) {
	if t.draftOnly(s) {
		t.skipDraft(s)
		return
	}
	t.moveStep(s, rbtype.StepReady)
	t.touch(s)
	t.readied(s, nil)
}

// skipAfter skips a step because its predecessor pred ended without
// completing: UPSTREAM_SKIPPED when pred's was a quiet skip, else as
// after a failure.
func (t *transition) skipAfter(s *rbtype.Step, pred string) {
	t.moveStep(s, rbtype.StepSkipped)
	s.FinishedAt = &t.Now
	t.touch(s)
	ps := t.byKey[pred]
	if ps != nil && ps.Status == rbtype.StepSkipped && ps.ErrorCode.SkipsQuietly() {
		s.ErrorCode, s.ErrorMessage = rbtype.CodeUpstreamSkipped, "it reads the result of @"+pred+", which was skipped"
		t.event(rbtype.EventStepSkipped, s, StepSkippedData{Because: pred, Status: ps.Status, Reason: rbtype.CodeUpstreamSkipped})
		return
	}
	var status rbtype.StepStatus
	if ps != nil {
		status = ps.Status
	}
	t.event(rbtype.EventStepSkipped, s, StepSkippedData{Because: pred, Status: status})
}

// gates holds ready steps that need an approval they do not have. Only
// that step waits; other branches go on.
func (t *transition) gates() {
	for _, s := range t.Steps {
		if s.Status != rbtype.StepReady || s.Gate == rbtype.GateNone || s.GateDecision == rbtype.GateApproved {
			continue
		}
		if t.Rb.Mode == rbtype.ModeDryRun {
			continue // a dry run previews; it does not wait for people
		}
		t.moveStep(s, rbtype.StepWaitingApproval)
		t.touch(s)
		t.event(rbtype.EventGateRequested, s, GateRequestedData{Gate: s.Gate})
	}
}

// settle ends the runbook when every step is final: failed if any failed
// under abort or isolate (its compensations then run), escalated if any
// escalated, partial if the only failures were accepted (continue),
// complete otherwise.
func (t *transition) settle() {
	if t.Rb.Status != rbtype.RunbookExecuting || len(t.newSteps) > 0 {
		// Finished already, or held open: a held-open runbook finishes
		// only after it is closed, however its steps end. Or grown by an
		// extension: its new steps, stored by this write, have yet to run.
		return
	}
	var failed, accepted, escalated, drafted []string
	for _, s := range t.Steps {
		if t.isHookStep(s) {
			continue // hooks run once the runbook has ended (hooks.go)
		}
		if !s.Status.Done() {
			return
		}
		switch {
		case s.Status == rbtype.StepSkipped && s.ErrorCode == rbtype.CodeDraftOnly:
			drafted = append(drafted, s.Key)
		case s.Status == rbtype.StepFailed && t.plan.onFailure(s.Key) == rbtype.OnFailureContinue:
			accepted = append(accepted, s.Key)
		case s.Status == rbtype.StepFailed:
			failed = append(failed, s.Key)
		case s.Status == rbtype.StepEscalated:
			escalated = append(escalated, s.Key)
		}
	}
	status, event := rbtype.RunbookComplete, rbtype.EventRunbookCompleted
	var data RunbookFinishedData
	switch {
	case len(failed) > 0:
		status, event = rbtype.RunbookFailed, rbtype.EventRunbookFailed
		data.FailedSteps = failed
		first := t.byKey[failed[0]]
		compensating := t.scheduleCompensations()
		t.setRunbook(status, first.ErrorCode, first.ErrorMessage)
		t.Runbook.Finished = !compensating && !t.hooksLeft() // its hooks run after its compensations
	case len(escalated) > 0:
		status, event = rbtype.RunbookEscalated, rbtype.EventRunbookEscalated
		data.EscalatedSteps = escalated
		t.setRunbook(status, rbtype.CodeParkTimeout, "escalated to a person")
		t.Runbook.Finished = !t.escalationsLeft() // an escalation still to page keeps it going
	case len(accepted) > 0 || len(drafted) > 0:
		// A draft is never complete: what it skipped has yet to run
		// (rbd retry ID --execute). DRAFT_ONLY is a reason, not an error.
		status, event = rbtype.RunbookPartial, rbtype.EventRunbookPartial
		data.FailedSteps = accepted
		if len(drafted) > 0 {
			data.Reason, data.SkippedSteps = rbtype.CodeDraftOnly, drafted
			t.setRunbook(status, rbtype.CodeDraftOnly, "a draft_only runbook did not run its steps with outside effects: "+strings.Join(drafted, ", "))
		} else {
			t.setRunbook(status, "", "")
		}
		if len(accepted) > 0 {
			t.Runbook.Finished = !t.hooksLeft() // its failure hooks run next
		} else {
			t.skipHooks() // a draft is no failure
		}
	default:
		t.setRunbook(status, "", "")
		t.skipHooks()
	}
	t.moveRunbook(status)
	t.event(event, nil, data)
}

func (t *transition) setRunbook(status rbtype.RunbookStatus, code rbtype.ErrorCode, message string) {
	c := t.runbookChange()
	c.Status = &status
	if code != "" {
		c.ErrorCode, c.ErrorMessage = &code, &message
		t.Rb.ErrorCode, t.Rb.ErrorMessage = code, message // what the hooks read as @failure
	}
	c.Finished = true // a failing runbook with compensations to run clears this
}

func (t *transition) runbookChange() *rbtype.RunbookChange {
	if t.Runbook == nil {
		t.Runbook = &rbtype.RunbookChange{ID: t.Rb.ID}
	}
	return t.Runbook
}

// nextWake is when the runbook needs a worker again: now if a step can
// start; else the earliest retry or park timeout; else never (only the
// outside world can move it). Lease expiries are not here: keeping them
// would rewrite the runbook row, and its wake_at index, in every
// transaction of a busy runbook, for the rare worker that dies;
// boundByLeases keeps a wake-up no later than they expire, mostly by
// leaving the one the claim set.
func (t *transition) nextWake() *time.Time {
	var next *time.Time
	consider := func(at time.Time) {
		if next == nil || at.Before(*next) {
			at := at
			next = &at
		}
	}
	if t.executing() && (len(t.newSteps) > 0 || len(t.condDue) > 0 || t.later) {
		// An extension's or an expansion's steps are looked at in the next
		// round, and so are conditions and templates waiting for data.
		consider(t.Now)
	}
	if t.hooking() && t.hooksPending() {
		consider(t.Now) // the hooks start in the next round
	}
	if t.executing() {
		for _, s := range t.Steps {
			switch s.Status {
			case rbtype.StepReady:
				consider(t.Now)
			case rbtype.StepFailedRetryable:
				if s.NextAttemptAt != nil {
					consider(*s.NextAttemptAt)
				}
			case rbtype.StepParked:
				if inv, ok := t.invocations[s.ID]; ok {
					consider(inv.TimeoutAt)
				}
			}
		}
	}
	if t.Rb.Status != rbtype.RunbookCancelled {
		for _, s := range t.Steps {
			if s.EscalationStatus == rbtype.CompensationPending {
				consider(t.Now)
			}
		}
	}
	if t.Rb.Status.Compensates() {
		if len(t.compensate) > 0 {
			consider(t.Now) // just marked: the next transaction starts them
		}
		for _, s := range t.Steps {
			if s.CompensationStatus == rbtype.CompensationPending {
				consider(t.Now)
			}
		}
	}
	return next
}

// wakeChanged reports whether next differs from the stored wake-up, to
// microseconds, which is what the database keeps.
// boundByLeases makes sure a runbook with calls out is looked at once
// their leases could have expired: no sweep looks for expired leases (they
// are columns of unindexed step rows), so a dead worker's steps are found
// by the claim this wake-up brings. Writing the runbook row whenever a
// lease is taken would cost a row per step; a wake-up already set no later
// than the earliest lease's expiry, and still to come, is kept instead.
// That is the common case: the claim that handed the runbook out set one,
// LeaseTTL ahead, before any of its leases were taken.
func (t *transition) boundByLeases(next *time.Time) *time.Time {
	var bound *time.Time
	for _, l := range t.leases {
		if bound == nil || l.ExpiresAt.Before(*bound) {
			at := l.ExpiresAt
			bound = &at
		}
	}
	if bound == nil || next != nil && !next.After(*bound) {
		return next
	}
	if old := t.Rb.WakeAt; old != nil && old.After(t.Now) && !old.After(*bound) {
		return old
	}
	// A wake-up already past (a runbook handed to this worker without a
	// claim, Engine.wakeUp) would have it claimed again for nothing.
	return bound
}

func (t *transition) wakeChanged(next *time.Time) bool {
	old := t.Rb.WakeAt
	if old == nil || next == nil {
		return (old == nil) != (next == nil)
	}
	return !old.Truncate(time.Microsecond).Equal(next.Truncate(time.Microsecond))
}
