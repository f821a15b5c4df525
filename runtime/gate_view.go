package runtime

import (
	"context"
	"encoding/json"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// eventPolicyGated is the event a policy writes when it gates a step
// (docs/design/semantics.md section 10), whose data names the rule.
const eventPolicyGated rbtype.EventType = "POLICY_GATED"

// describeGates fills in the gate of each step the view says waits for a
// decision. It reads the plan and the policy's events only when one does.
func (e *Engine) describeGates(ctx context.Context, rb *driver.Runbook, steps []*driver.Step, v *apitype.RunbookView) error {
	var waiting []int
	for i, b := range v.BlockedOn {
		if b.Reason == apitype.BlockedRequiresApproval {
			waiting = append(waiting, i)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	facts, err := e.newStepFacts(ctx, rb, steps)
	if err != nil {
		return err
	}
	for _, i := range waiting {
		s := facts.step(v.BlockedOn[i].Step)
		if s == nil {
			continue
		}
		g := facts.gateOf(s)
		if g.Trust, err = e.gateTrust(ctx, rb.Tenant, s.Verb); err != nil {
			return err
		}
		v.BlockedOn[i].Gate = &g
	}
	return nil
}

// stepFacts is what describing a runbook's steps to a person takes: its
// decoded plan, its steps' states and results, its inputs, and what its
// policy said.
type stepFacts struct {
	plan    *compiler.Plan
	effects map[string]compiler.Effect
	steps   map[string]*driver.Step
	results map[string]json.RawMessage
	inputs  map[string]any
	policy  map[string]json.RawMessage // step key → POLICY_GATED data
}

func (e *Engine) newStepFacts(ctx context.Context, rb *driver.Runbook, steps []*driver.Step) (*stepFacts, error) {
	info, err := e.planOf(rb)
	if err != nil {
		return nil, err
	}
	f := &stepFacts{plan: info.Plan, effects: map[string]compiler.Effect{}, steps: map[string]*driver.Step{},
		results: map[string]json.RawMessage{}, policy: map[string]json.RawMessage{}}
	effects := info.Plan.Effects
	if effects == nil {
		effects = compiler.Effects(info.Plan) // a plan frozen before effects were kept
	}
	for _, ef := range effects {
		f.effects[ef.Step] = ef
	}
	for _, s := range steps {
		f.steps[s.Key] = s
		if s.Status == rbtype.StepComplete {
			f.results[s.Key] = s.Result
		}
	}
	if in, err := rbtype.DecodeJSON(rb.Inputs); err == nil {
		f.inputs, _ = in.(map[string]any)
	}
	evs, err := e.store.EventsOfType(ctx, rb.ID, []rbtype.EventType{eventPolicyGated})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if ev.StepKey != "" {
			f.policy[ev.StepKey] = ev.Data
		}
	}
	return f, nil
}

// step is a plan step by key; nil when the plan has none.
func (f *stepFacts) step(key string) *compiler.Step { return f.plan.Step(key) }

// gateOf describes a step's gate to the person deciding it.
func (f *stepFacts) gateOf(s *compiler.Step) apitype.GateView {
	g := apitype.GateView{Verb: s.Verb, Risk: f.risk(s), SideEffects: s.Execution.SideEffects, Target: compiler.Target(s)}
	g.Args, _ = f.resolvedArgs(s)
	g.Why, g.Policy = f.why(s)
	if row := f.steps[s.Key]; row != nil {
		g.Since = row.UpdatedAt
	}
	g.When = machine.GateWhenText(f.plan, s.Key)
	g.Approvers = s.Approvers
	return g
}

// risk is a step's verb's risk, low when it declares none.
func (f *stepFacts) risk(s *compiler.Step) rbtype.Risk {
	if info := f.plan.Verbs[s.Verb]; info != nil && info.Risk != "" {
		return info.Risk
	}
	return rbtype.RiskLow
}

// why says what gates a step, when one does: the policy (its event says
// so), a high-risk verb, the verb's own gate, or the call's.
func (f *stepFacts) why(s *compiler.Step) (string, json.RawMessage) {
	switch {
	case f.policy[s.Key] != nil:
		return apitype.GatePolicy, f.policy[s.Key]
	case s.Gate != rbtype.GateHumanConfirm:
		return "", nil
	case f.risk(s) == rbtype.RiskHigh:
		return apitype.GateRisk, nil
	case s.Execution.Gate == rbtype.GateHumanConfirm:
		return apitype.GateVerb, nil
	}
	return apitype.GateCall, nil
}

// resolvedArgs are a step's arguments with inputs and references
// resolved from what is known; complete is false when some reference
// waits on a step that has no result yet (that argument stays as the plan
// has it).
func (f *stepFacts) resolvedArgs(s *compiler.Step) (args map[string]any, complete bool) {
	b := &machine.Binder{Results: f.results, Inputs: f.inputs}
	args, complete = make(map[string]any, len(s.Args)), true
	for name, v := range s.Args {
		r, err := b.Resolve(v)
		if err != nil {
			r, complete = v, false
		}
		args[name] = r
	}
	return args, complete
}
