package machine

import (
	"time"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Twins attach (docs/design/semantics.md section 16). A durable step whose
// idempotency key is shared (the global scope, which is per tenant: a
// tenant's keys name it, keys.go) may meet, in another
// runbook, a step under the same key whose wait is still open. Starting
// the work again would send the provider the same key under a second
// correlation key: one that dedupes keeps the first and never answers the
// second, which then waits until its timeout. So the second step, the
// twin, does not start: it parks on a wait of its own that makes no call
// (attached), and takes the first wait's result through the receipt that
// wait's completion writes under the key. Once the first wait has
// completed, a step under its key takes the receipt at once, as any step
// does. A twin whose first wait ends without a receipt (failed, timed out,
// cancelled) fails retryably (DEPENDENCY_UNAVAILABLE), so its retry policy
// decides whether it starts the work on its own.
//
// The round's order makes "no open wait and no receipt" mean that the
// first wait ended without one: open waits are read before receipts, and a
// wait's completion and its receipt commit together.

// twinPoll is how often an attached twin looks for its first wait's
// receipt: the first wait's completion does not wake the twin's runbook.
const twinPoll = time.Second

// sharesWait reports whether a step of exec may be, or have, a twin: a
// durable step with an effect whose key is shared across runbooks (of
// its tenant).
func sharesWait(exec *verbs.Execution) bool {
	return exec.Kind == rbtype.KindDurable && looksUpReceipt(exec) && exec.Idempotency.Scope == rbtype.ScopeGlobal
}

// sharedWaitKey is the key a durable step's wait records, so that a twin
// finds it: its idempotency key when it shares waits, else "".
func sharedWaitKey(s *rbtype.Step, exec *verbs.Execution) string {
	if sharesWait(exec) {
		return s.IdempotencyKey
	}
	return ""
}

// TwinKeys lists the shared keys to look up open waits under: those of
// the prepared steps that would start a wait of their own, and those of
// the attached twins (whether their first wait is still open).
func (r *Round) TwinKeys() (keys []string) {
	seen := map[string]bool{}
	add := func(k string) {
		if k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, p := range r.ready {
		t := r.byID[p.step.RunbookID]
		if _, own := t.invocations[p.step.ID]; !own && t.Rb.Mode != rbtype.ModeDryRun {
			add(sharedWaitKey(p.step, &p.exec))
		}
	}
	for _, t := range r.States {
		for _, s := range t.attachedTwins() {
			add(s.IdempotencyKey)
		}
	}
	return keys
}

// SupplyTwins hands over the open waits found for TwinKeys, by key. The
// map is the round's: a step that starts a shared wait in this round adds
// its own, so a step under the same key later in the round (of this
// runbook or another) attaches to it.
func (r *Round) SupplyTwins(open map[string]rbtype.Invocation) {
	if open == nil {
		open = map[string]rbtype.Invocation{}
	}
	for _, t := range r.States {
		t.twins = open
	}
}

// attachedTwins are the runbook's parked steps whose waits are attached.
func (t *transition) attachedTwins() []*rbtype.Step {
	var out []*rbtype.Step
	for _, s := range t.Steps {
		if s.Status != rbtype.StepParked {
			continue
		}
		if inv, ok := t.invocations[s.ID]; ok && inv.Attached && s.IdempotencyKey != "" {
			out = append(out, s)
		}
	}
	return out
}

// twinReceiptKeys are the receipts that would complete the attached twins.
func (t *transition) twinReceiptKeys() []rbtype.ReceiptKey {
	var keys []rbtype.ReceiptKey
	for _, s := range t.attachedTwins() {
		keys = append(keys, rbtype.ReceiptKey{Handler: t.execution(s).Handler, IdempotencyKey: s.IdempotencyKey})
	}
	return keys
}

// attachTwin parks a prepared step on a wait of its own, attached to
// another runbook's open wait under its key, without a call, and reports
// whether it did. A step that has a wait of its own already (its start
// call was cut off) is started again under it instead.
func (t *transition) attachTwin(p *prepared) bool {
	s := p.step
	key := sharedWaitKey(s, &p.exec)
	if key == "" || t.twins == nil || t.Rb.Mode == rbtype.ModeDryRun {
		return false
	}
	if inv, own := t.invocations[s.ID]; own {
		t.holdsWait(key, inv)
		return false
	}
	first, ok := t.twins[key]
	if !ok || first.StepID == s.ID {
		// No one holds the key: this step starts the wait, and a step
		// under the same key later in the round attaches to it.
		t.holdsWait(key, &rbtype.Invocation{RunbookID: t.Rb.ID, StepID: s.ID})
		return false
	}
	s.Attempt++
	t.moveStep(s, rbtype.StepRunning)
	s.StartedAt = &t.Now
	s.ErrorCode, s.ErrorMessage = "", ""
	t.touch(s)
	t.started(s)
	inv := t.invocationFor(s, p.exec)
	inv.Attached = true
	for i := range t.newInvocations {
		if t.newInvocations[i].InvocationID == inv.InvocationID {
			t.newInvocations[i].Attached = true
		}
	}
	t.moveStep(s, rbtype.StepParked)
	t.touch(s)
	firstRunbook := first.RunbookID
	t.event(rbtype.EventStepParked, s, StepParkedData{CorrelationKey: inv.CorrelationKey, TimeoutAt: inv.TimeoutAt, AttachedTo: &firstRunbook})
	return true
}

// holdsWait records, for the rest of the round, that a step of this
// runbook holds the open wait under key.
func (t *transition) holdsWait(key string, inv *rbtype.Invocation) {
	if _, held := t.twins[key]; !held {
		t.twins[key] = rbtype.Invocation{RunbookID: inv.RunbookID, StepID: inv.StepID, CorrelationKey: inv.CorrelationKey}
	}
}

// settleTwins completes the attached twins whose first wait's receipt was
// found, and fails retryably those whose first wait ended without one.
func (t *transition) settleTwins(receipts map[rbtype.ReceiptKey]rbtype.Receipt) {
	if !t.executing() {
		return
	}
	for _, s := range t.attachedTwins() {
		if r, ok := receipts[rbtype.ReceiptKey{Handler: t.execution(s).Handler, IdempotencyKey: s.IdempotencyKey}]; ok {
			t.finishInvocation(s, rbtype.InvocationCompleted)
			t.complete(s, r.Result, false, StepSucceededData{Receipt: true})
			continue
		}
		if t.twins == nil {
			continue // not looked up in this round
		}
		if _, open := t.twins[s.IdempotencyKey]; !open {
			t.finishInvocation(s, rbtype.InvocationCancelled)
			t.failStep(s, handler.Errorf(rbtype.CodeDependencyUnavailable,
				"the wait this step attached to (another runbook's, under the same idempotency key) ended without a result"))
		}
	}
}

// twinWake is when an attached twin looks for its receipt again.
func (t *transition) twinWake(inv *rbtype.Invocation) (time.Time, bool) {
	if !inv.Attached {
		return time.Time{}, false
	}
	return t.Now.Add(twinPoll), true
}
