package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Extension is more source for a running runbook.
type Extension struct {
	Filename string
	Source   []byte
	// Inputs supplies the inputs the new calls use that the runbook does
	// not have yet; inputs it has cannot change.
	Inputs map[string]any
	Actor  string
}

// extendTries bounds how often an extension compiles again because another
// changed the runbook while it compiled.
const extendTries = 3

// Extend compiles new calls against a running runbook's frozen plan and
// appends them, with their edges, logged in the runbook's mutations. The
// new calls may use the existing steps' results; existing steps never
// change, and a runbook that has finished cannot grow.
//
// The compile runs outside the runbook's lock, which the runbook's
// advances need: it reads the runbook, compiles against that version, and
// under the lock checks that the version is still the one compiled
// against (compiling again if another extension came first).
func (e *Engine) Extend(ctx context.Context, runbookID uuid.UUID, x Extension) (*apitype.Extended, error) {
	x.Actor, _ = actorOf(ctx, x.Actor) // the mutation's actor is the token's, when it names one
	if e.cfg.Catalogue == nil {
		return nil, fmt.Errorf("%w: this daemon has no verb catalogue to compile sources with", rbtype.ErrInvalid)
	}
	for try := 1; ; try++ {
		rb, err := e.visibleRunbook(ctx, runbookID)
		if err != nil {
			return nil, err
		}
		ext, err := e.compileExtension(ctx, rb, x)
		if err != nil {
			return nil, err
		}
		err = e.runCommand(ctx, runbookID, &machine.ExtendRunbook{Ext: ext, Actor: x.Actor})
		if errors.Is(err, machine.ErrExtendedMeanwhile) && try < extendTries {
			continue
		}
		if errors.Is(err, machine.ErrExtendedMeanwhile) {
			return nil, fmt.Errorf("%w: runbook %s kept changing while the extension compiled; try again", rbtype.ErrConflict, runbookID)
		}
		if err != nil {
			return nil, err
		}
		return &apitype.Extended{Steps: ext.Keys, Version: ext.Version}, nil
	}
}

// compileExtension compiles x against the runbook as read (its plan, its
// inputs and its version), without any lock, and admits its new steps.
func (e *Engine) compileExtension(ctx context.Context, rb *driver.Runbook, x Extension) (*machine.CompiledExtension, error) {
	if !rb.Status.Running() {
		return nil, fmt.Errorf("%w: runbook %s is %s; only a running runbook can be extended", rbtype.ErrConflict, rb.ID, rb.Status)
	}
	if err := machine.CheckSourceBytes(e.cfg.Limits, x.Source); err != nil {
		return nil, err
	}
	base, err := compiler.DecodePlan(rb.Plan)
	if err != nil {
		return nil, err
	}
	opts, cat, outside := e.scopedCompile(ctx, e.compileOptions())
	plan, diags := opts.ExtendSource(base, x.Filename, x.Source, cat)
	if err := outside(); err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, &CompileError{Diagnostics: diags}
	}
	// Checked here to refuse early, without the lock; the state machine
	// checks the steps again against the version it extends.
	if err := machine.CheckSteps(e.cfg.Limits, len(plan.Steps)); err != nil {
		return nil, err
	}
	planJSON := plan.JSON()
	if err := machine.CheckPlanBytes(e.cfg.Limits, planJSON); err != nil {
		return nil, err
	}
	existing := map[string]bool{}
	for _, s := range base.Steps {
		existing[s.Key] = true
	}
	var added []*compiler.Step
	for _, s := range plan.Steps {
		if !existing[s.Key] {
			added = append(added, s)
		}
	}
	for _, edge := range plan.Edges {
		if existing[edge.To] && !slices.Contains(base.Edges, edge) {
			return nil, fmt.Errorf("%w: the extension would add a dependency to step %q, which exists already", rbtype.ErrConflict, edge.To)
		}
	}
	frozen := map[string]any{}
	if v, err := rbtype.DecodeJSON(rb.Inputs); err == nil {
		frozen, _ = v.(map[string]any)
	}
	for name := range x.Inputs {
		if _, had := frozen[name]; had {
			return nil, fmt.Errorf("%w: input $%s is set already and cannot change", rbtype.ErrInvalid, name)
		}
	}
	if err := checkInputs(plan.Inputs, x.Inputs, frozen); err != nil {
		return nil, err
	}
	inputs := maps.Clone(orEmpty(frozen))
	maps.Copy(inputs, x.Inputs)
	ext := &machine.CompiledExtension{RunbookID: rb.ID, Source: x.Filename, Plan: plan, PlanJSON: planJSON, Version: rb.Version + 1,
		Edges: machine.EdgesOf(plan.Edges, func(to string) bool { return !existing[to] })}
	if ext.Inputs, err = json.Marshal(inputs); err != nil {
		return nil, fmt.Errorf("%w: inputs do not marshal: %v", rbtype.ErrInvalid, err)
	}
	adm, err := e.admit(ctx, rb.Tenant, plan, added)
	if err != nil {
		return nil, err
	}
	if ext.Added, err = machine.NewSteps(added, len(base.Steps)); err != nil {
		return nil, fmt.Errorf("%w: %v", rbtype.ErrInvalid, err)
	}
	adm.gate(ext.Added)
	ext.PolicyHash, ext.Gated = adm.tenant.Hash(), adm.events
	ext.Keys = make([]string, len(added))
	for i, s := range added {
		ext.Keys[i] = s.Key
	}
	return ext, nil
}
