package compiler

import (
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// PolicyStep is what a policy judges of a step of p: its verb, its frozen
// policy tags and side effects, and its verb's risk. A verb the plan's table lacks has a
// risk nobody knows, which the policy refuses unless the step is
// read_only (docs/design/semantics.md section 10: fail closed).
func (p *Plan) PolicyStep(s *Step) policy.Step {
	out := policy.Step{Key: s.Key, Verb: s.Verb, Tags: s.Execution.PolicyTags, SideEffects: s.Execution.SideEffects}
	if info, ok := p.Verbs[s.Verb]; ok && info != nil {
		out.Risk = rbtype.RiskLow
		if info.Risk != "" {
			out.Risk = info.Risk
		}
	}
	return out
}

// StepDecision is a tenant's policy's decision on one step of a plan.
type StepDecision struct {
	Step string `json:"step"`
	Verb string `json:"verb"`
	policy.Decision
}

// PolicyDecisions judges every step of p, hooks and for-each templates
// included, under a tenant's policy, in plan order.
func (p *Plan) PolicyDecisions(t *policy.Tenant) []StepDecision {
	out := make([]StepDecision, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = StepDecision{Step: s.Key, Verb: s.Verb, Decision: t.Decide(p.PolicyStep(s))}
	}
	return out
}

// WithPolicyGates is p with a human_confirm gate on each step the
// decisions gate, as admission stores it, for showing what the policy
// makes of the plan's effects (Effects). p is left as it is; the copy's
// hash is p's, and it is not to be stored.
func (p *Plan) WithPolicyGates(decisions []StepDecision) *Plan {
	gated := map[string]bool{}
	for _, d := range decisions {
		if d.Action == policy.Gate {
			gated[d.Step] = true
		}
	}
	cp := *p
	cp.sealed = nil
	cp.Steps = make([]*Step, len(p.Steps))
	for i, s := range p.Steps {
		cp.Steps[i] = s
		if gated[s.Key] && s.Gate != rbtype.GateHumanConfirm {
			gs := *s
			gs.Gate = rbtype.GateHumanConfirm
			cp.Steps[i] = &gs
		}
	}
	cp.Effects = Effects(&cp)
	return &cp
}
