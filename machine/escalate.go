package machine

import (
	"encoding/json"
	"fmt"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// An escalating wait runs its verb's timeouts.escalation verb (docs/design/semantics.md
// section 8): the step escalates at once, as before, and its escalation is
// a call of its own, leased and recorded like a compensation, so that a
// worker that dies during the page leaves it to another worker, under the
// same key. The escalation is best effort in one sense only: its failure
// is recorded (ESCALATION_FAILED) and leaves the step escalated, waiting
// for a person either way.

// EscalationStartedData is the data of ESCALATION_STARTED.
type EscalationStartedData struct {
	Verb string `json:"verb"`
	// OnBehalfOf is the actor of the token that submitted the runbook,
	// whose scope the escalation is held to (verb_call_scope.go).
	OnBehalfOf string `json:"on_behalf_of,omitempty"`
}

// EscalationSucceededData is the data of ESCALATION_SUCCEEDED: what the
// escalation verb returned (an incident's id, say).
type EscalationSucceededData struct {
	Result json.RawMessage `json:"result,omitempty"`
	// Receipt: the page had been sent under the same key before; its
	// receipt answered and the provider was not called again.
	Receipt bool `json:"receipt,omitempty"`
}

// scheduleEscalation marks an escalating step's escalation as due, when its
// verb has one. A dry run simulates waits, so nothing escalates for real.
// An escalation still running from an earlier attempt's timeout is left to
// finish: one page per person's attention is enough.
func (t *transition) scheduleEscalation(s *rbtype.Step, exec *verbs.Execution) {
	if exec.Timeouts.Escalation == nil || t.Rb.Mode == rbtype.ModeDryRun || s.EscalationStatus == rbtype.CompensationRunning {
		return
	}
	s.EscalationStatus, s.EscalationError = rbtype.CompensationPending, ""
}

// escalationRunning refuses a change that would start a step again while
// its escalation is still due: the step's one lease is the escalation's
// until it returns, a matter of its verb's run_timeout at most.
func escalationRunning(s *rbtype.Step) error {
	if s.EscalationStatus.Due() {
		return fmt.Errorf("%w: step %q is still escalating (its escalation verb has not returned); try again in a moment", rbtype.ErrConflict, s.Key)
	}
	return nil
}

// escalationsLeft reports whether any escalation is still to run.
func (t *transition) escalationsLeft() bool {
	for _, s := range t.Steps {
		if s.EscalationStatus.Due() {
			return true
		}
	}
	return false
}

// prepareEscalation resolves the next pending escalation's arguments from
// the step's own. It returns nil when there is none to start now.
func (t *transition) prepareEscalation() *prepared {
	if t.Rb.Status == rbtype.RunbookCancelled {
		return nil
	}
	for _, s := range t.Steps {
		if s.EscalationStatus != rbtype.CompensationPending {
			continue
		}
		esc := t.execution(s).Timeouts.Escalation
		if esc == nil {
			// The plan changed under it (it cannot): nothing to run.
			t.failEscalation(s, handler.Errorf(rbtype.CodeInternal, "the step's execution block has no escalation"))
			continue
		}
		if exec, ok := t.plan.execution(esc.Verb); ok && t.draftSkips(exec.SideEffects) {
			t.skipEscalation(s, esc.Verb)
			continue
		}
		// Keyed by the escalation verb's own scope and key fields
		// (verb_call_keys.go), a reminder apart from the timeout's page
		// (escalationPurpose): a retry that times out again pages again
		// only if the page's key differs; under the same key the first
		// page's receipt answers.
		p, err := t.prepareVerbCall(s, esc, "escalation", escalationPurpose(s))
		if err != nil {
			t.failEscalation(s, err)
			continue
		}
		return p
	}
	return nil
}

// startEscalation leases a prepared escalation's call, or completes it
// from the receipt of a page already sent under its key.
func (t *transition) startEscalation(p *prepared, receipts map[rbtype.ReceiptKey]rbtype.Receipt) {
	if p == nil {
		return
	}
	s := p.step
	esc := t.execution(s).Timeouts.Escalation
	if r, ok := receipts[p.receipt]; ok {
		s.EscalationStatus = rbtype.CompensationRunning
		t.touch(s)
		// On whose behalf, as for a call: the receipt stands for one
		// made for the same submitter (verb_call_scope.go).
		t.event(rbtype.EventEscalationStarted, s, EscalationStartedData{Verb: esc.Verb, OnBehalfOf: t.Rb.Actor})
		t.applyEscalation(s, &Outcome{Purpose: callEscalation, StepID: s.ID, Value: r.Result, IdemKey: p.receipt.IdempotencyKey, fromReceipt: true})
		return
	}
	impl, ok := t.m.Handler(p.exec.Handler)
	if !ok {
		t.failEscalation(s, handler.Errorf(rbtype.CodeDependencyUnavailable, "handler %q is not registered in this daemon", p.exec.Handler))
		return
	}
	s.EscalationStatus = rbtype.CompensationRunning
	t.touch(s)
	t.event(rbtype.EventEscalationStarted, s, EscalationStartedData{Verb: esc.Verb, OnBehalfOf: t.Rb.Actor})
	call := &handler.Call{
		RunbookID: t.Rb.ID, StepKey: s.Key, Verb: esc.Verb, Attempt: s.Attempt, Args: p.args,
		Params: p.exec.Params, IdempotencyKey: p.receipt.IdempotencyKey, Execution: p.exec,
		Seed: StepSeed(OriginOf(t.Rb, &p.exec), s.Key+":"+escalationPurpose(s), s.Attempt),
	}
	t.lease(s, call, impl, p.exec.Timeouts.RunTimeout.D, false, callEscalation)
}

// applyEscalation records an escalation's outcome. The step stays
// escalated either way: the escalation only tells a person.
func (t *transition) applyEscalation(s *rbtype.Step, o *Outcome) {
	if s.EscalationStatus != rbtype.CompensationRunning {
		return
	}
	if o.Err != nil {
		t.failEscalation(s, o.Err)
		return
	}
	s.EscalationStatus, s.EscalationError = rbtype.CompensationComplete, ""
	t.touch(s)
	if esc := t.execution(s).Timeouts.Escalation; esc != nil && !o.fromReceipt && o.IdemKey != "" {
		// The page happened: its receipt answers the next escalation
		// under the same key (verb_call_keys.go).
		if exec, ok := t.plan.execution(esc.Verb); ok && looksUpReceipt(&exec) && len(o.Value) > 0 {
			t.receipts = append(t.receipts, rbtype.Receipt{
				Handler: exec.Handler, IdempotencyKey: o.IdemKey, RunbookID: t.Rb.ID, Scope: exec.Idempotency.Scope,
				StepKey: s.Key + ":" + PurposeEscalate, Result: o.Value, ResultHash: HashJSON(o.Value),
			})
		}
	}
	t.event(rbtype.EventEscalationSucceeded, s, EscalationSucceededData{Result: o.Value, Receipt: o.fromReceipt})
	t.escalationsSettled()
}

func (t *transition) failEscalation(s *rbtype.Step, e *handler.Error) {
	s.EscalationStatus, s.EscalationError = rbtype.CompensationFailed, string(e.Code)+": "+e.Message
	t.touch(s)
	t.event(rbtype.EventEscalationFailed, s, StepFailedData{Code: e.Code, Message: e.Message})
	t.escalationsSettled()
}

// escalationsSettled finishes an escalated runbook whose last escalation
// just ended: until then it had work of its own to do, and a follower of
// its events would have missed the page's outcome.
func (t *transition) escalationsSettled() {
	if t.Rb.Status == rbtype.RunbookEscalated && t.Rb.FinishedAt == nil && !t.escalationsLeft() && !t.compensationsLeft() {
		t.runbookChange().Finished = true
	}
}
