package runtime

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// StepDetail is one step as a person inspecting it needs it: its state (as
// in the runbook's view), its arguments as frozen and as resolved, what it
// does to the outside world, and the gate that applies to it.
type StepDetail struct {
	StepView
	// Args are the arguments as the plan froze them: literals, and
	// {"$ref": ...} and {"$input": ...} placeholders.
	Args map[string]any `json:"args"`
	// ResolvedArgs are their values: what its last attempt was called
	// with once it has run (ArgsFrom "attempt"), else resolved from the
	// inputs and the results known now ("resolved", or "partial" when a
	// reference waits on a step without a result yet, which stays as the
	// plan has it).
	ResolvedArgs json.RawMessage `json:"resolved_args"`
	ArgsFrom     string          `json:"args_from"`
	Risk         rbtype.Risk     `json:"risk"`
	// SideEffects and Target are what the step does to the world outside
	// and what it acts on (the plan's effects).
	SideEffects rbtype.SideEffects `json:"side_effects"`
	Target      string             `json:"target,omitempty"`
	// GateWhy says what put the step's own gate there (GatePolicy,
	// GateRisk, GateVerb, GateCall); empty without one. Policy is the
	// policy's word on it, when a policy gated it.
	GateWhy string          `json:"gate_why,omitempty"`
	Policy  json.RawMessage `json:"policy,omitempty"`
	// GatedBy is the step whose gate stands in front of this one's
	// effect: itself, one upstream, or none (empty).
	GatedBy   string              `json:"gated_by,omitempty"`
	Execution verbs.Execution     `json:"execution"`
	VerbHash  string              `json:"verb_hash"`
	Pos       *compiler.SourcePos `json:"pos,omitempty"`
}

// Where a step's resolved arguments come from.
const (
	ArgsFromAttempt  = "attempt"
	ArgsFromResolved = "resolved"
	ArgsFromPartial  = "partial"
)

// Step returns one step of a runbook in detail; ErrNotFound (with a
// did-you-mean) for a key the runbook does not have.
func (e *Engine) Step(ctx context.Context, id uuid.UUID, key string) (*StepDetail, error) {
	rb, err := e.visibleRunbook(ctx, id)
	if err != nil {
		return nil, err
	}
	// Every step's state, and the results of the first MaxViewSteps, from
	// which the step's arguments are resolved.
	all := driver.StepPage{Limit: MaxViewSteps}
	steps, err := e.store.Steps(ctx, id, all)
	if err != nil {
		return nil, err
	}
	invs, err := e.store.InvocationsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	info, err := e.planOf(rb)
	if err != nil {
		return nil, err
	}
	facts, err := e.newStepFacts(ctx, rb, steps)
	if err != nil {
		return nil, err
	}
	ps := facts.step(key)
	if ps == nil {
		return nil, machine.NoStep(id, key, steps)
	}
	d := &StepDetail{Args: ps.Args, Risk: facts.risk(ps), SideEffects: ps.Execution.SideEffects, Target: compiler.Target(ps),
		Execution: ps.Execution, VerbHash: ps.VerbHash, Pos: ps.Pos}
	for _, sv := range buildView(rb, steps, invs, all, info).Steps {
		if sv.Key == key {
			d.StepView = sv
		}
	}
	if d.Args == nil {
		d.Args = map[string]any{}
	}
	d.GateWhy, d.Policy = facts.why(ps)
	d.GatedBy = facts.effects[key].GatedBy
	// The arguments its last attempt was called with: a view's step rows
	// leave them out, so they are read for this step alone (no hash: the
	// step's own).
	called, err := e.store.StepArguments(ctx, id, key, "")
	if err != nil {
		return nil, err
	}
	if len(called) > 0 {
		d.ResolvedArgs, d.ArgsFrom = called, ArgsFromAttempt
		return d, nil
	}
	args, complete := facts.resolvedArgs(ps)
	if d.ResolvedArgs, err = json.Marshal(args); err != nil {
		return nil, err
	}
	d.ArgsFrom = ArgsFromResolved
	if !complete {
		d.ArgsFrom = ArgsFromPartial
	}
	return d, nil
}
