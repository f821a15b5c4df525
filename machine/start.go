package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// PendingCall is a handler call a transaction leased, to run once it
// commits.
type PendingCall struct {
	RunbookID uuid.UUID
	StepID    int64
	Attempt   int
	Handler   handler.Handler
	Call      *handler.Call
	Timeout   time.Duration
	DryRun    bool
	Purpose   callPurpose
	// CacheKey, when set, stores the call's result in the result cache
	// under this key, for its verb definition's hash.
	CacheKey, DefinitionHash string
	// Rehearsal, when set, dry-runs (and verifies) the call before it
	// commits (execution levels full and guarded; rehearse.go).
	Rehearsal *Rehearsal
	// ArgsHash is the hash of the call's arguments, for its outcome.
	ArgsHash string
	// Span is the span the call runs in, which the handler's context
	// carries (http.call sends it as traceparent): a step call's attempt's,
	// a compensation's or an escalation's runbook's.
	Span trace.SpanContext
}

// callPurpose says what a handler call does for its step: run it, undo
// it, or page someone about it. Its outcome is applied accordingly.
type callPurpose int

// The purposes of a call.
const (
	callStep callPurpose = iota
	CallCompensation
	callEscalation
)

// Outcome is what a handler call came back with.
type Outcome struct {
	RunbookID uuid.UUID
	StepID    int64
	Attempt   int
	Purpose   callPurpose
	// CacheKey and definitionHash come from the call: where to store its
	// result for reuse.
	CacheKey, DefinitionHash string
	// Rehearsed is what the call's Rehearsal saw, if it had one.
	Rehearsed *Rehearsed
	// Span and attemptID are the call's, for log lines about it.
	Span      trace.SpanContext
	AttemptID uuid.UUID
	Result    handler.Result
	Value     json.RawMessage // the result's value as JSON
	IdemKey   string
	// ArgsHash is the hash of the arguments the call was made with.
	ArgsHash  string
	Err       *handler.Error
	DryRun    bool
	simulated bool
	// fromReceipt: the outcome is a stored receipt's, no call was made.
	fromReceipt bool
}

// Unrecordable is the outcome that replaces one the database refused to
// record, again and again (engine.retry): the step fails, for good, with
// a message that names the kind of problem but not the database's words,
// which may name tables or hold the value itself.
// badValue says the database refused a value of it (driver.ErrBadRequest)
// rather than failed.
func (o *Outcome) Unrecordable(badValue bool) *Outcome {
	why := "the database refused to record it"
	if badValue {
		why = "it holds a value the database cannot store (a NUL character, invalid UTF-8, a number out of range, or a value too large)"
	}
	return &Outcome{
		RunbookID: o.RunbookID, StepID: o.StepID, Attempt: o.Attempt, Purpose: o.Purpose, IdemKey: o.IdemKey,
		Span: o.Span, AttemptID: o.AttemptID,
		Err: handler.Errorf(rbtype.CodeInternal, "the call returned, but its result could not be recorded: %s; the call is not made again", why),
	}
}

// prepared is a ready step whose arguments are resolved and whose keys are
// known, waiting for the receipt check.
type prepared struct {
	step    *rbtype.Step
	args    map[string]any
	exec    verbs.Execution
	receipt rbtype.ReceiptKey
	// cacheKey is set when the verb caches (cache.go): cacheLookup says
	// whether to look it up first, definitionHash goes with the entry.
	cacheKey, definitionHash string
	cacheLookup              bool
}

// simulatedInputs is why a dry run simulates a step whose arguments it
// cannot resolve.
const simulatedInputs = "its inputs come from simulated steps"

// prepare resolves and validates the arguments of every ready step and
// derives its idempotency key. A step whose arguments cannot be resolved
// or do not fit its schema fails for good: retrying cannot change them.
func (t *transition) prepare() []*prepared {
	return t.prepareWhere(func(*rbtype.Step) bool { return true })
}

// prepareWhere is prepare for the ready steps that want says to.
func (t *transition) prepareWhere(want func(*rbtype.Step) bool) []*prepared {
	if !t.executing() {
		return nil
	}
	var b, hb *Binder
	var out []*prepared
	for _, s := range t.Steps {
		if s.Status != rbtype.StepReady || !want(s) {
			continue
		}
		ps := t.plan.Steps[s.Key]
		if ps == nil {
			t.failStep(s, handler.Errorf(rbtype.CodeInternal, "step %q is not in the runbook's plan", s.Key))
			continue
		}
		sb := b
		if t.isHookStep(s) {
			if hb == nil {
				hb = t.stepBinder(s)
			}
			sb = hb
		} else if b == nil {
			b = t.stepBinder(nil)
			sb = b
		}
		resolved, err := sb.Resolve(map[string]any(ps.Args))
		if err != nil {
			if t.Rb.Mode == rbtype.ModeDryRun && t.dependsOnSimulated(s) {
				t.completeDryRun(s, nil, simulatedInputs)
				continue
			}
			t.failStep(s, handler.Classify(err))
			continue
		}
		args := resolved.(map[string]any)
		if info, ok := t.plan.Plan.Verbs[s.Verb]; ok && info.InputSchema != nil {
			if err := info.InputSchema.Validate(args); err != nil {
				if t.Rb.Mode == rbtype.ModeDryRun && t.dependsOnSimulated(s) {
					t.completeDryRun(s, nil, simulatedInputs)
					continue
				}
				t.failStep(s, handler.Errorf(rbtype.CodeSchemaValidationFailed, "arguments do not match %s's input_schema: %v", s.Verb, err))
				continue
			}
		}
		exec := ps.Execution
		if !t.keepsKey(s, &exec) {
			s.IdempotencyKey = IdempotencyKey(OriginOf(t.Rb, &exec), s.Key, s.Verb, exec.Idempotency, args)
		}
		old := s.ResolvedArgs
		if s.ResolvedArgs, err = json.Marshal(args); err != nil {
			t.failStep(s, handler.Errorf(rbtype.CodeInvalidInput, "the resolved arguments do not encode as JSON: %v", err))
			continue
		}
		t.keepArguments(s, old)
		t.touch(s)
		p := &prepared{step: s, args: args, exec: exec,
			receipt: rbtype.ReceiptKey{Handler: exec.Handler, IdempotencyKey: s.IdempotencyKey}}
		t.prepareCache(p)
		out = append(out, p)
	}
	return out
}

// keepsKey reports whether a step keeps the idempotency key it has. In a
// regeneration, a step that does not regenerate keeps the key it
// inherited from its parent (or derived when it first ran, if the parent
// never ran it), even though its arguments may differ: they follow from
// a regenerated draft, and the effect that happened under that key must
// not happen again. Everywhere else the key is derived from the
// arguments on every start, as it always was.
func (t *transition) keepsKey(s *rbtype.Step, exec *verbs.Execution) bool {
	return s.IdempotencyKey != "" && t.Rb.Lineage.Generation > 0 && !Regenerates(exec)
}

// dependsOnSimulated reports whether any predecessor of s was only
// simulated in a dry run.
func (t *transition) dependsOnSimulated(s *rbtype.Step) bool {
	for _, p := range t.plan.preds[s.Key] {
		if ps := t.byKey[p]; ps != nil && ps.Simulated {
			return true
		}
	}
	return false
}

// start begins the prepared steps: one with a stored receipt completes
// with it, without a call; in a dry run, a step with side effects calls
// its handler's DryRun or is recorded as simulated; the others are leased,
// marked running, and handed to the worker to call. A durable step's
// invocation is persisted here, before its handler starts the external
// work (park step 2 of docs/design/runtime.md).
func (t *transition) start(steps []*prepared, receipts map[rbtype.ReceiptKey]rbtype.Receipt, cached map[string]rbtype.CacheEntry) {
	for _, p := range steps {
		s := p.step
		if s.Status != rbtype.StepReady {
			// Moved on since it was prepared: an earlier step of this
			// batch failed under abort (or spent the budget) and skipped
			// it. It must not start.
			continue
		}
		if r, ok := receipts[p.receipt]; ok && t.Rb.Mode != rbtype.ModeDryRun {
			t.complete(s, r.Result, false, StepSucceededData{Receipt: true})
			continue
		}
		if t.fromCache(p, cached) {
			continue
		}
		if t.attachTwin(p) {
			continue // another runbook's wait under its key answers it (twins.go)
		}
		impl, ok := t.m.Handler(p.exec.Handler)
		if !ok {
			// The attempt counts, so that max_attempts ends it: a daemon
			// restarted with the handler back (a rolling deploy) picks it
			// up on a retry, and one that never gets it fails for good.
			s.Attempt++
			t.touch(s)
			t.failStep(s, handler.Errorf(rbtype.CodeDependencyUnavailable, "handler %q is not registered in this daemon", p.exec.Handler))
			continue
		}
		dryRun := t.Rb.Mode == rbtype.ModeDryRun && (p.exec.SideEffects != rbtype.SideEffectsNone || p.exec.Kind == rbtype.KindDurable)
		if dryRun {
			if _, can := impl.(handler.DryRunner); !can {
				t.completeDryRun(s, nil, "")
				continue
			}
		}
		if t.deniedNow(s) || !t.reclaimed[s.ID] && (t.heldByBudget(s) || t.overBudget(s)) {
			continue // no attempt: denied, held or failed, and the handler is never called (policy_now.go, budget*.go)
		}
		if !t.reclaimed[s.ID] { // a reclaimed call kept its reservation, or its place among the unreserved
			if c := t.declaredCost(s); c > 0 {
				t.reserve(s, c)
			} else if t.countsUnreserved(s) {
				t.countUnreserved(+1, false) // budget_unreserved.go
			}
		}
		s.Attempt++
		t.moveStep(s, rbtype.StepRunning)
		s.StartedAt = &t.Now
		s.ErrorCode, s.ErrorMessage = "", ""
		t.touch(s)
		call := &handler.Call{
			RunbookID: t.Rb.ID, StepKey: s.Key, Verb: s.Verb, Attempt: s.Attempt, Args: p.args,
			Params: p.exec.Params, IdempotencyKey: s.IdempotencyKey, Execution: p.exec, DryRun: dryRun,
			Seed: StepSeed(OriginOf(t.Rb, &p.exec), s.Key, s.Attempt),
		}
		if p.exec.Kind == rbtype.KindDurable && !dryRun {
			inv := t.invocationFor(s, p.exec)
			call.InvocationID, call.CorrelationKey = inv.InvocationID, inv.CorrelationKey
			call.CallbackURL = t.m.CallbackURL
		}
		if t.runsInline(p, impl, dryRun) {
			t.callInline(s, call, impl, p.exec.Timeouts.RunTimeout.D)
			continue
		}
		t.lease(s, call, impl, p.exec.Timeouts.RunTimeout.D, dryRun, callStep)
		if !dryRun {
			// The call's result goes to the cache under the key looked up.
			leased := t.calls[len(t.calls)-1]
			leased.CacheKey, leased.DefinitionHash = p.cacheKey, p.definitionHash
			leased.Rehearsal = t.rehearsalFor(p, dryRun)
		}
		t.started(s)
	}
}

// invocationFor returns the step's active invocation, or persists a new
// one derived from the attempt. An invocation outlives retries of the
// start call and reclaims of its lease, so the external system always sees
// the same correlation key for the same wait.
func (t *transition) invocationFor(s *rbtype.Step, exec verbs.Execution) *rbtype.Invocation {
	if inv, ok := t.invocations[s.ID]; ok {
		return inv
	}
	id, key := t.m.Keys.InvocationIDs(t.Rb.ID, s.Key, s.Attempt)
	timeout := time.Hour
	if exec.Timeouts.ParkTimeout != nil {
		timeout = exec.Timeouts.ParkTimeout.D
	}
	inv := rbtype.Invocation{
		InvocationID: id, StepID: s.ID, RunbookID: t.Rb.ID, Attempt: s.Attempt, CorrelationKey: key,
		Status: rbtype.InvocationActive, ParkedAt: t.Now, TimeoutAt: t.Now.Add(timeout),
		IdempotencyKey: sharedWaitKey(s, &exec),
	}
	t.newInvocations = append(t.newInvocations, inv)
	s.InvocationID = &inv.InvocationID
	t.invocations[s.ID] = &inv
	return &inv
}

// lease asks for the step's lease and queues the call.
func (t *transition) lease(s *rbtype.Step, call *handler.Call, h handler.Handler, timeout time.Duration, dryRun bool, purpose callPurpose) {
	t.leaseRequests = append(t.leaseRequests, rbtype.LeaseRequest{StepID: s.ID, RunbookID: t.Rb.ID, Attempt: s.Attempt})
	t.leases[s.ID] = rbtype.Lease{StepID: s.ID, RunbookID: t.Rb.ID, WorkerID: t.m.Worker, Attempt: s.Attempt,
		ExpiresAt: t.Now.Add(t.m.LeaseTTL)}
	span := t.runbookTrace().Span
	if purpose == callStep {
		call.AttemptID = AttemptID(t.Rb.ID, s.Key, s.Attempt)
		span = t.runbookTrace().AttemptSpan(call.AttemptID)
	}
	t.calls = append(t.calls, &PendingCall{
		RunbookID: t.Rb.ID, StepID: s.ID, Attempt: s.Attempt, Handler: h, Call: call,
		Timeout: timeout, DryRun: dryRun, Purpose: purpose, Span: span, ArgsHash: t.argsHash[s.ID],
	})
}

// HashJSON is the hex SHA-256 of JSON bytes, as the ledger records
// arguments and results.
func HashJSON(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
