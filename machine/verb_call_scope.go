package machine

import (
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// Compensations and escalations on the submitter's behalf
// (docs/design/semantics.md section 17; docs/daemon.md, "Policy, scope and
// budgets"). They are calls no request asks for at the moment they run,
// so nobody's token is there to judge them: they run on behalf of the
// token that submitted the runbook, and may do nothing it could not do at
// submission. When one is about to run it is checked again: the verb
// must be in that token's scope (verbs=, max_risk=, kept on the runbook),
// and the policy in force must let it run unattended. A compensation or
// an escalation never waits at a gate, so one the policy would hold for a
// person does not run: it fails POLICY_DENIED, which shows as its failure
// and in next_actions, and a person does it by hand.

// verbCallRefusal says why a compensation's or an escalation's verb may
// not run now, or nil when it may. what names the call for the message.
func (t *transition) verbCallRefusal(verb, what string) *handler.Error {
	risk := rbtype.RiskLow
	if info, ok := t.plan.Plan.Verbs[verb]; ok && info != nil && info.Risk != "" {
		risk = info.Risk
	}
	if sc := t.Rb.Scope; sc != nil {
		on := "the token that submitted the runbook"
		if sc.Actor != "" {
			on += " (" + sc.Actor + ")"
		}
		if len(sc.Verbs) > 0 && !policy.VerbScope(sc.Verbs).Allows(verb) {
			return handler.Errorf(rbtype.CodePolicyDenied, "the %s verb %s is outside the scope of %s (verbs=%s); it did not run",
				what, verb, on, policy.VerbScope(sc.Verbs))
		}
		if sc.MaxRisk != "" && !risk.Within(sc.MaxRisk) {
			return handler.Errorf(rbtype.CodePolicyDenied, "the %s verb %s is risk %s, above the max_risk %s of %s; it did not run",
				what, verb, risk, sc.MaxRisk, on)
		}
	}
	if t.book == nil || t.book.Pol == nil {
		return nil
	}
	exec, ok := t.plan.execution(verb)
	if !ok {
		return nil // prepareVerbCall says the plan lacks it
	}
	d := t.book.Pol.Tenant(t.Rb.Tenant).Decide(policy.Step{Verb: verb, Tags: exec.PolicyTags, Risk: risk, SideEffects: exec.SideEffects})
	switch d.Action {
	case policy.Deny:
		return handler.Errorf(rbtype.CodePolicyDenied, "the policy in force refuses the %s: %s", what, d.Reason)
	case policy.Gate:
		return handler.Errorf(rbtype.CodePolicyDenied, "the policy in force holds verb %s for a person (%s: %s), and a %s never waits at a gate, so it did not run; do it by hand, or let the policy auto-execute one of its tags",
			verb, d.Rule, d.Reason, what)
	}
	return nil
}
