package runtime

import (
	"context"
	"fmt"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// checkVerbCalls judges the verbs a plan's steps may call later on no
// request's behalf, their compensations and escalations, as admission
// judges the steps (docs/design/semantics.md section 17): a verb outside
// the caller's scope is 403 FORBIDDEN, one the tenant's policy denies 403
// POLICY_DENIED, each naming the step and the verb. They run on behalf
// of the token that submitted the runbook and are checked again when
// they run (machine's verb_call_scope.go), where one the policy would
// hold for a person fails POLICY_DENIED rather than run unattended.
func checkVerbCalls(ctx context.Context, t *policy.Tenant, plan *compiler.Plan, steps []*compiler.Step) error {
	s, scoped := scopeOf(ctx)
	for _, st := range steps {
		for _, call := range verbCalls(st) {
			info := plan.Verbs[call.verb]
			risk := rbtype.RiskLow
			if info != nil && info.Risk != "" {
				risk = info.Risk
			}
			if scoped && !s.Verbs.Allows(call.verb) {
				return fmt.Errorf("%w: step %q has %s verb %s, which this token's scope (verbs=%s) does not allow",
					rbtype.ErrForbidden, st.Key, call.what, call.verb, s.Verbs)
			}
			if scoped && !risk.Within(s.maxRisk()) {
				return fmt.Errorf("%w: step %q has %s verb %s of risk %s, above this token's max_risk %s",
					rbtype.ErrForbidden, st.Key, call.what, call.verb, risk, s.maxRisk())
			}
			var tags []string
			var effects rbtype.SideEffects
			if info != nil && info.Execution != nil {
				tags, effects = info.Execution.PolicyTags, info.Execution.SideEffects
			}
			if d := t.Decide(policy.Step{Verb: call.verb, Tags: tags, Risk: risk, SideEffects: effects}); d.Action == policy.Deny {
				return fmt.Errorf("%w: step %q (its %s, verb %s): %s", rbtype.ErrPolicyDenied, st.Key, call.what, call.verb, d.Reason)
			}
		}
	}
	return nil
}

// verbCall is a verb a step may call besides its own.
type verbCall struct{ what, verb string }

// verbCalls lists a step's compensation and escalation verbs.
func verbCalls(st *compiler.Step) []verbCall {
	var out []verbCall
	if c := st.Execution.Compensation; c != nil && c.Verb != "" {
		out = append(out, verbCall{"compensation", c.Verb})
	}
	if e := st.Execution.Timeouts.Escalation; e != nil && e.Verb != "" {
		out = append(out, verbCall{"escalation", e.Verb})
	}
	return out
}
