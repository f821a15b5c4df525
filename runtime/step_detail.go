package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// Step returns one step of a runbook in detail; ErrNotFound (with a
// did-you-mean) for a key the runbook does not have.
func (e *Engine) Step(ctx context.Context, id uuid.UUID, key string) (*apitype.StepDetail, error) {
	rb, err := e.visibleRunbook(ctx, id)
	if err != nil {
		return nil, err
	}
	// Every step's state, and the results of the first MaxViewSteps, from
	// which the step's arguments are resolved.
	all := driver.StepPage{Limit: apitype.MaxViewSteps}
	steps, err := e.reader(ctx).Steps(ctx, id, all)
	if err != nil {
		return nil, err
	}
	invs, err := e.reader(ctx).InvocationsOf(ctx, id)
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
	exec, err := json.Marshal(ps.Execution)
	if err != nil {
		return nil, fmt.Errorf("step %q: its execution block does not encode: %w", key, err)
	}
	d := &apitype.StepDetail{Args: ps.Args, Risk: facts.risk(ps), SideEffects: ps.Execution.SideEffects, Target: compiler.Target(ps),
		Execution: exec, VerbHash: ps.VerbHash}
	if ps.Pos != nil {
		d.Pos = &apitype.SourcePos{File: ps.Pos.File, Line: ps.Pos.Line, Column: ps.Pos.Column}
	}
	for _, sv := range buildView(rb, steps, invs, all, info).Steps {
		if sv.Key == key {
			d.StepView = sv
		}
	}
	if d.Args == nil {
		d.Args = map[string]any{}
	}
	d.GateWhy, d.Policy = facts.why(ps)
	d.GateWhen, d.Approvers = machine.GateWhenText(info.Plan, key), ps.Approvers
	d.GatedBy = facts.effects[key].GatedBy
	// The arguments its last attempt was called with: a view's step rows
	// leave them out, so they are read for this step alone (no hash: the
	// step's own).
	called, err := e.reader(ctx).StepArguments(ctx, id, key, "")
	if err != nil {
		return nil, err
	}
	if len(called) > 0 {
		d.ResolvedArgs, d.ArgsFrom = called, apitype.ArgsFromAttempt
		return d, nil
	}
	args, complete := facts.resolvedArgs(ps)
	if d.ResolvedArgs, err = json.Marshal(args); err != nil {
		return nil, err
	}
	d.ArgsFrom = apitype.ArgsFromResolved
	if !complete {
		d.ArgsFrom = apitype.ArgsFromPartial
	}
	return d, nil
}
