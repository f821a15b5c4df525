package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// Admission (docs/design/semantics.md section 10). A plan coming in (a
// submission, an extension's new steps, a regeneration, a schedule's
// tick) is judged once, before anything is stored: the caller's token
// scope must allow every verb it names and their risks; the tenant's
// policy must deny none of its steps; the steps the policy gates get a
// human_confirm gate on their rows, announced by POLICY_GATED; and the
// policy's hash is kept with the runbook. What was decided is frozen: a
// later policy never changes a stored step's gate.

// admission is what the scope and the policy decided about a plan's
// steps.
type admission struct {
	tenant *policy.Tenant
	// gates holds the decisions that gate a step, by key.
	gates map[string]policy.Decision
	// events are the POLICY_GATED of the gated steps, in plan order.
	events []driver.Event
}

// PolicyGatedData is the data of POLICY_GATED: the rule that gated the
// step, the pattern and tag it matched, and the policy it is a rule of.
type PolicyGatedData struct {
	Rule       string `json:"rule"`
	Pattern    string `json:"pattern,omitempty"`
	Tag        string `json:"tag,omitempty"`
	PolicyHash string `json:"policy_hash"`
	Reason     string `json:"reason"`
}

// Policy is the policy in force: the one Config.Policy gives, or the
// built-in policy.
func (e *Engine) Policy() *policy.Policy {
	if e.machine.Policy == nil { // an engine not made by New (tests)
		return policy.Builtin()
	}
	return e.machine.Policy()
}

// policyOf is Config.Policy made total: never nil.
func policyOf(f func() *policy.Policy) func() *policy.Policy {
	builtin := policy.Builtin()
	return func() *policy.Policy {
		if f != nil {
			if p := f(); p != nil {
				return p
			}
		}
		return builtin
	}
}

// admit judges steps of plan (every step, for a new runbook; an
// extension's new ones) for tenant, under the scope of ctx and the policy
// in force. A verb outside the token's scope is ErrForbidden, a step the
// policy denies ErrPolicyDenied; each names the step and the verb, and
// nothing is stored.
func (e *Engine) admit(ctx context.Context, tenant string, plan *compiler.Plan, steps []*compiler.Step) (*admission, error) {
	if err := checkScope(ctx, plan, steps); err != nil {
		return nil, err
	}
	a := &admission{tenant: e.Policy().Tenant(tenant), gates: map[string]policy.Decision{}}
	if err := checkVerbCalls(ctx, a.tenant, plan, steps); err != nil {
		return nil, err
	}
	trust, err := e.trustCounts(ctx, a.tenant, steps)
	if err != nil {
		return nil, err
	}
	var denied []string
	for _, s := range steps {
		ps := plan.PolicyStep(s)
		ps.Approvals = trust[s.Verb].Approvals
		d := a.tenant.Decide(ps)
		switch d.Action {
		case policy.Deny:
			denied = append(denied, fmt.Sprintf("step %q (verb %s): %s", s.Key, s.Verb, d.Reason))
		case policy.Gate:
			if d.Rule == policy.RuleGateByEffect && s.Gate == rbtype.GateHumanConfirm {
				// It waits for a person already, by its own gate (its
				// verb's, its risk's or its call's), which is what the
				// effect rule asks: the gate keeps saying why it is there.
				continue
			}
			a.gates[s.Key] = d
			ev, err := machine.NewEvent(uuid.Nil, rbtype.EventPolicyGated, e.workerID, &driver.Step{Key: s.Key}, PolicyGatedData{
				Rule: d.Rule, Pattern: d.Pattern, Tag: d.Tag, PolicyHash: a.tenant.Hash(), Reason: d.Reason})
			if err != nil {
				return nil, err
			}
			a.events = append(a.events, ev)
		}
	}
	if len(denied) > 0 {
		msg := denied[0]
		if len(denied) > 1 {
			msg += fmt.Sprintf(" (and %d more steps the policy refuses)", len(denied)-1)
		}
		return nil, fmt.Errorf("%w: %s", rbtype.ErrPolicyDenied, msg)
	}
	return a, nil
}

// gate applies the admission's gates to the rows of steps about to be
// stored: a policy gate is a human_confirm gate, like a verb's own.
func (a *admission) gate(rows []driver.NewStep) {
	for i := range rows {
		if _, ok := a.gates[rows[i].Key]; ok {
			rows[i].Gate = rbtype.GateHumanConfirm
		}
	}
}

// checkScope refuses a plan that names a verb the caller's token may not
// use, or a verb riskier than it may run (docs/design/semantics.md
// section 10): 403 FORBIDDEN naming the step and the verb.
func checkScope(ctx context.Context, plan *compiler.Plan, steps []*compiler.Step) error {
	s, ok := scopeOf(ctx)
	if !ok {
		return nil
	}
	for _, st := range steps {
		if !s.Verbs.Allows(st.Verb) {
			return fmt.Errorf("%w: step %q calls verb %s, which this token's scope (verbs=%s) does not allow",
				rbtype.ErrForbidden, st.Key, st.Verb, s.Verbs)
		}
		if ceiling := s.maxRisk(); ceiling != rbtype.RiskHigh {
			if risk := plan.PolicyStep(st).Risk; !risk.Within(ceiling) {
				return fmt.Errorf("%w: step %q calls verb %s of risk %s, above this token's max_risk %s",
					rbtype.ErrForbidden, st.Key, st.Verb, riskText(risk), ceiling)
			}
		}
	}
	return nil
}

func riskText(r rbtype.Risk) string {
	if r == "" {
		return "unknown"
	}
	return string(r)
}

// checkBudget checks a submission's own budget: numbers at or above zero,
// none above the tenant's runbook budget (the one an admin set, else the
// policy's): a submission may only lower it (docs/design/semantics.md
// section 11).
func (e *Engine) checkBudget(ctx context.Context, t *policy.Tenant, asked *rbtype.Budget) error {
	if asked == nil {
		return nil
	}
	if m := asked.Invalid(); m != "" {
		return fmt.Errorf("%w: budget.%s must be a number at or above zero", rbtype.ErrInvalid, m)
	}
	limit, rule := t.Budget(rbtype.BudgetRunbook)
	set, err := e.store.TenantBudgets(ctx, []string{t.Name}, e.cfg.Clock())
	if err != nil {
		return err
	}
	if b, ok := set[t.Name].Set[rbtype.BudgetRunbook]; ok {
		limit, rule = b, "the budget set for tenant "+t.Name
	}
	if over := asked.Over(limit); len(over) > 0 {
		var parts []string
		for _, m := range over {
			parts = append(parts, fmt.Sprintf("%s %s above %s", m, amountOf(*asked, m), limitText(limit, m)))
		}
		return fmt.Errorf("%w: budget %s: a submission may only lower the runbook budget of %s", rbtype.ErrInvalid, strings.Join(parts, ", "), rule)
	}
	return nil
}

// amountOf is one measure of a budget as text; "none" when it caps
// nothing.
func amountOf(b rbtype.Budget, measure string) string {
	raw, _ := json.Marshal(b) // numbers only
	var m map[string]json.Number
	_ = json.Unmarshal(raw, &m)
	if v, ok := m[measure]; ok {
		return v.String()
	}
	return "none"
}

func limitText(b rbtype.Budget, measure string) string { return amountOf(b, measure) }
