package machine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// transition is one runbook's state inside one transaction, with its
// outbox (outbox.go): what the transaction must write. It holds the
// runbook's live steps (see durable's liveStepsSQL): a step of the plan
// that is not among them has completed. Its methods are the state machine
// of docs/design/runtime.md; they change steps in memory and record in the
// outbox what changed. Nothing here talks to the database: runtime's
// advance.go loads the state and writes the outbox.
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
	// twins are the open waits of other runbooks under the shared keys
	// the round looked up, by key; nil when it looked none up (twins.go).
	twins map[string]rbtype.Invocation

	// outbox is everything the transaction writes.
	outbox

	// argsHash and usage are, by step, the hash of the arguments its
	// attempt started with and what its attempt used, when this
	// transaction knows them: for the ledger and the outcome.
	argsHash map[int64]string
	usage    map[int64]rbtype.Usage
	// inlined counts the steps called inside this transaction (inline.go).
	inlined int
	// data holds the arguments and results of steps not loaded (completed
	// ones), fetched as needed; see Engine.fillData.
	data map[string]rbtype.StepData
	// trace is the runbook's trace context, once worked out; parks are
	// the waits whose spans the outbox's Spans will carry (spans.go).
	trace *runbookTrace
	parks map[int64]*parkWait
	// book is the round's budgets (budget.go); nil checks none.
	book *BudgetBook

	// AbortedWaits are the active waits this round's abort cancelled:
	// once it commits, their handlers are asked to stop the outside work,
	// as a cancel's are (docs/design/semantics.md, "Abort stops outside
	// work").
	AbortedWaits []rbtype.Invocation

	// Grown is the plan as this round's expansions grew it, written with
	// their steps (loops.go); nil when nothing was expanded.
	Grown *PlanInfo
	// ExpansionDeferred: a list was ready to expand and the round left it
	// for the next (Machine.DeferExpansion, expand_deferred.go).
	ExpansionDeferred bool
	// condDue are the pending steps whose predecessors have all ended and
	// whose conditions are to be decided, once their data is in hand
	// (conditions.go).
	condDue []*rbtype.Step
	// flight caches, for each loop with :parallel, its elements in
	// flight, while one pass of propagate runs.
	flight map[string]map[int]bool
	// callFlight counts, for each template whose call has :parallel, its
	// instances in flight, while one pass of propagate runs
	// (call_parallel.go).
	callFlight map[string]int
	// budgetHeld: a step waits for budget (budget_reserve.go); the
	// runbook is looked at again in BudgetRecheck.
	budgetHeld bool
	// reclaimed are the steps whose lease this round reclaimed, to be
	// called again: an attempt the budget admitted already, which keeps
	// its reservation and counts as running (budget_reserve.go).
	reclaimed map[int64]bool
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
		outbox: outbox{Dirty: map[int64]bool{}, completed: map[int64]bool{}, finishInvocations: map[rbtype.InvocationStatus][]uuid.UUID{},
			readyEvent: map[int64]int{}},
		data:     map[string]rbtype.StepData{},
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

// Plan is the plan the round read the runbook's steps with.
func (t *transition) Plan() *PlanInfo { return t.plan }

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
	if t.plan == nil || t.failureMode(s) != rbtype.OnFailureAbort || t.isHookStep(s) {
		return // a failed hook triggers nothing
	}
	for _, o := range t.Steps {
		if t.isHookStep(o) {
			continue // hooks run once the runbook has ended
		}
		if t.reclaimed[o.ID] {
			continue // a call in flight whose worker died this round: made again, as a running one finishes
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
	if inv := t.invocations[o.ID]; inv != nil {
		t.AbortedWaits = append(t.AbortedWaits, *inv) // asked to stop once this commits, as a cancel's are
	}
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
		if s.Status == rbtype.StepFailed && t.failureMode(s) == rbtype.OnFailureAbort && !t.isHookStep(s) {
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
		t.recordLate(s, o) // late_outcome.go
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
	if o.DryRun {
		// A rehearsal's answer describes the request, not the provider's
		// reply: the output_schema is not held against it (dryrun_result.go).
		t.completeDryRun(s, o.Value, "")
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
		if t.reclaimInDoubt(s) {
			t.release(s) // its lease ended without an outcome
			continue     // not called again: a person decides (in_doubt.go)
		}
		if failed := t.abortedBy(); failed != nil {
			// Its worker died and the runbook is aborting: nothing new
			// starts, so the call is not made again.
			t.release(s)
			t.cancelAborted(s, failed)
			continue
		}
		t.moveStep(s, rbtype.StepReady)
		t.touch(s)
		if t.reclaimed == nil {
			t.reclaimed = map[int64]bool{}
		}
		t.reclaimed[s.ID] = true
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
	t.flight, t.condDue, t.callFlight = nil, nil, nil
	for _, s := range t.Steps {
		if s.Status != rbtype.StepPending || t.isHookStep(s) != hooking {
			continue
		}
		if tmpl := t.abortedTemplate(s); tmpl != "" {
			// Made in the round that aborted (loops.go); an inner list's
			// template among them, and then its own instances.
			t.skipAfter(s, tmpl)
			continue
		}
		if t.plan.IsTemplate(s.Key) {
			continue
		}
		ready, blocked, quiet := true, "", ""
		for _, p := range t.plan.preds[s.Key] {
			ps := t.byKey[p]
			if ps == nil {
				continue // not live: complete
			}
			if t.plan.settles(s.Key, p) {
				// A status test: settled with anything, it lets the
				// condition be decided (settle_edges.go); a draft has no
				// status to test, and taints it (whole_lists.go).
				if t.draftTaints(p) {
					blocked = p
				} else {
					ready = ready && settleWait(ps)
				}
				continue
			}
			if ps.Status == rbtype.StepFailed && t.failureMode(ps) == rbtype.OnFailureContinue && !t.plan.readsResult(s.Key, p) {
				continue // an accepted failure: a step joined only by :after runs
			}
			if ps.Status == rbtype.StepSkipped && ps.ErrorCode.SkipsQuietly() {
				if t.plan.readsResult(s.Key, p) && quiet == "" {
					quiet = p
				}
				continue
			}
			if ps.Status.BlocksDependents() {
				if blocked == "" || t.draftTaints(p) && t.plan.readsResult(s.Key, p) {
					blocked = p // a draft read taints, whatever else blocks (whole_lists.go)
				}
				continue
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
		case !ready || t.callHoldsBack(s) || t.holdsBack(s):
		case t.plan.Steps[s.Key] != nil && t.plan.Steps[s.Key].When != nil:
			t.condDue = append(t.condDue, s)
		default:
			t.makeReady(s)
		}
	}
}

// propagateAll runs propagate until a pass changes nothing. One pass
// cascades skips in plan order, but :parallel counts the elements in
// flight as the pass starts: an element a draft skipped in this pass
// frees its place only for the next. The last phase of a round runs it so,
// since nothing else would bring the round that lets the next element
// through.
func (t *transition) propagateAll() {
	for range len(t.Steps) + 1 {
		before := len(t.events)
		t.propagate()
		if len(t.events) == before {
			return
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
	if t.draftTaints(pred) && (t.plan.readsResult(s.Key, pred) || t.plan.IsTemplate(s.Key)) {
		t.skipDraft(s) // what reads a draft is a draft (whole_lists.go)
		return
	}
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
	t.decideGateWhens()
	for _, s := range t.Steps {
		if s.Status != rbtype.StepReady || s.Gate == rbtype.GateNone || s.GateDecision == rbtype.GateApproved {
			continue
		}
		if t.Rb.Mode == rbtype.ModeDryRun {
			continue // a dry run previews; it does not wait for people
		}
		t.moveStep(s, rbtype.StepWaitingApproval)
		t.touch(s)
		t.event(rbtype.EventGateRequested, s, GateRequestedData{Gate: s.Gate, Approvers: t.approvers(s)})
	}
}
