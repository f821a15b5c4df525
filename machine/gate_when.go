package machine

import (
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// Gates that depend on data (docs/design/language.md v1.4, :gate-when):
// a step whose call gives :gate-when COND waits for a decision only when
// COND holds, decided once, when the step becomes ready, from the results
// it reads ("approve production erasures only").
//
// The step's row is stored without a gate (rowGate), so that a policy
// that gates the step at admission (a human_confirm frozen on the row,
// docs/design/semantics.md section 10) still gates it whatever COND says:
// a runbook cannot lift its tenant's gate. When COND holds the step moves
// to waiting_approval (GATE_REQUESTED, naming the condition), which is
// its record that the gate applied: a decision then readies it as any
// gate's does. When COND is false it runs. An operand that cannot be read
// fails the step, as a :when's does.

// rowGate is the gate a step's row is stored with: the plan's, except for
// a :gate-when, whose gate applies only once its condition is decided.
func rowGate(s *compiler.Step) rbtype.Gate {
	if s.GateWhen != nil {
		return rbtype.GateNone
	}
	return s.Gate
}

// decideGateWhens decides the :gate-when of every ready step that has one
// and no gate of its own yet, once what it reads is in hand: a step whose
// data has not been fetched (the first phase of a round) waits, ready,
// for the phase that has it. A dry run previews; it does not wait for
// people, as with any gate.
func (t *transition) decideGateWhens() {
	if t.Rb.Mode == rbtype.ModeDryRun {
		return
	}
	var b *Binder
	for _, s := range t.Steps {
		if s.Status != rbtype.StepReady || s.Gate != rbtype.GateNone || s.GateDecision != rbtype.GateUndecided {
			continue
		}
		ps := t.plan.Steps[s.Key]
		if ps == nil || ps.GateWhen == nil || !t.inputsInHand(s) {
			continue
		}
		if b == nil {
			b = t.stepBinder(nil)
		}
		holds, err := evalCond(ps.GateWhen, b)
		switch {
		case err != nil:
			t.failStep(s, err)
		case holds:
			t.moveStep(s, rbtype.StepWaitingApproval)
			t.touch(s)
			t.event(rbtype.EventGateRequested, s, GateRequestedData{Gate: rbtype.GateHumanConfirm, When: GateWhenText(t.plan.Plan, s.Key), Approvers: t.approvers(s)})
		}
	}
}

// approvers is the group whose tokens may decide a step's gate (the
// call's :approvers, else its verb's execution.approvers, as the plan
// froze it); empty for any token that may approve.
func (t *transition) approvers(s *rbtype.Step) string {
	if ps := t.plan.Steps[s.Key]; ps != nil {
		return ps.Approvers
	}
	return ""
}

// GateWhenText is a step's :gate-when as the runbook wrote it, for the
// person deciding: an instance of a for-each's template shows its
// template's (= @user.env "production"), not the markers its expansion
// put in place of the element. "" when the step has none.
func GateWhenText(p *compiler.Plan, key string) string {
	s := p.Step(key)
	if s == nil || s.GateWhen == nil {
		return ""
	}
	text := s.GateWhen.String()
	for {
		base, _, ok := instanceOf(key)
		if !ok {
			return text
		}
		t := p.Step(base)
		if t == nil || t.GateWhen == nil {
			return text
		}
		key, text = base, t.GateWhen.String()
	}
}
