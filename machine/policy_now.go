package machine

import (
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// Stricter later applies now (docs/design/semantics.md section 17). A
// running runbook keeps the gates frozen at its admission, but before
// each attempt its step is judged again by the policy in force: one
// reloaded since that denies a tag of the step, or lowers max_risk below
// its risk, fails the step POLICY_DENIED (never retried), and the step's
// failure mode decides what the runbook does. Only a denial is looked
// at: a relaxation (a gate lifted, a tag let run unattended) never
// reaches a running runbook, whose gates stay as they were frozen.

// deniedNow reports whether the policy in force refuses s's next attempt,
// and if so fails the step.
func (t *transition) deniedNow(s *rbtype.Step) bool {
	if t.book == nil || t.book.Pol == nil || t.plan == nil {
		return false
	}
	ps := t.plan.Steps[s.Key]
	if ps == nil {
		return false
	}
	d := t.book.Pol.Tenant(t.Rb.Tenant).Decide(t.plan.Plan.PolicyStep(ps))
	if d.Action != policy.Deny {
		return false
	}
	t.failStep(s, handler.Errorf(rbtype.CodePolicyDenied, "the policy in force now refuses this step (%s): %s; it did not start", d.Rule, d.Reason))
	return true
}
