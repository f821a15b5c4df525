package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
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

// Extended says what an extension added.
type Extended struct {
	Steps   []string
	Version int
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
func (e *Engine) Extend(ctx context.Context, runbookID uuid.UUID, x Extension) (*Extended, error) {
	x.Actor, _ = actorOf(ctx, x.Actor) // the mutation's actor is the token's, when it names one
	if e.cfg.Catalogue == nil {
		return nil, fmt.Errorf("%w: this daemon has no verb catalogue to compile sources with", ErrInvalid)
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
		err = e.runCommand(ctx, runbookID, &extendRunbook{ext: ext, actor: x.Actor})
		if errors.Is(err, errExtendedMeanwhile) && try < extendTries {
			continue
		}
		if errors.Is(err, errExtendedMeanwhile) {
			return nil, fmt.Errorf("%w: runbook %s kept changing while the extension compiled; try again", ErrConflict, runbookID)
		}
		if err != nil {
			return nil, err
		}
		return &Extended{Steps: ext.keys, Version: ext.version}, nil
	}
}

// errExtendedMeanwhile: another extension changed the runbook between the
// compile and the lock.
var errExtendedMeanwhile = errors.New("the runbook was extended meanwhile")

// extension is a compiled extension of one version of a runbook.
type extension struct {
	runbookID uuid.UUID
	source    string
	plan      *compiler.Plan
	planJSON  []byte
	added     []driver.NewStep
	edges     []driver.Edge
	keys      []string
	inputs    json.RawMessage
	version   int
	// policyHash and gated are what admission decided of the new steps
	// (the policy of the day: docs/design/semantics.md section 10).
	policyHash string
	gated      []driver.Event
}

// compileExtension compiles x against the runbook as read (its plan, its
// inputs and its version), without any lock, and admits its new steps.
func (e *Engine) compileExtension(ctx context.Context, rb *driver.Runbook, x Extension) (*extension, error) {
	if !rb.Status.Running() {
		return nil, fmt.Errorf("%w: runbook %s is %s; only a running runbook can be extended", ErrConflict, rb.ID, rb.Status)
	}
	if err := checkSourceBytes(e.cfg.Limits, x.Source); err != nil {
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
	if err := checkSteps(e.cfg.Limits, len(plan.Steps)); err != nil {
		return nil, err
	}
	planJSON := plan.JSON()
	if err := checkPlanBytes(e.cfg.Limits, planJSON); err != nil {
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
			return nil, fmt.Errorf("%w: the extension would add a dependency to step %q, which exists already", ErrConflict, edge.To)
		}
	}
	frozen := map[string]any{}
	if v, err := decodeJSON(rb.Inputs); err == nil {
		frozen, _ = v.(map[string]any)
	}
	for name := range x.Inputs {
		if _, had := frozen[name]; had {
			return nil, fmt.Errorf("%w: input $%s is set already and cannot change", ErrInvalid, name)
		}
	}
	if err := checkInputs(plan.Inputs, x.Inputs, frozen); err != nil {
		return nil, err
	}
	inputs := maps.Clone(orEmpty(frozen))
	maps.Copy(inputs, x.Inputs)
	ext := &extension{runbookID: rb.ID, source: x.Filename, plan: plan, planJSON: planJSON, version: rb.Version + 1,
		edges: edgesOf(plan.Edges, func(to string) bool { return !existing[to] })}
	if ext.inputs, err = json.Marshal(inputs); err != nil {
		return nil, fmt.Errorf("%w: inputs do not marshal: %v", ErrInvalid, err)
	}
	adm, err := e.admit(ctx, rb.Tenant, plan, added)
	if err != nil {
		return nil, err
	}
	if ext.added, err = newSteps(added, len(base.Steps)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	adm.gate(ext.added)
	ext.policyHash, ext.gated = adm.tenant.Hash(), adm.events
	ext.keys = make([]string, len(added))
	for i, s := range added {
		ext.keys[i] = s.Key
	}
	return ext, nil
}

// extendRunbook is an extension: the new steps and edges, the mutation
// and its event, the new plan, version and inputs. The new steps take part
// from the next round on, once stored; until then the runbook does not
// settle (transition.settle).
type extendRunbook struct {
	ext   *extension
	actor string
}

func (c *extendRunbook) apply(t *transition) error {
	x := c.ext
	if t.rb.Version != x.version-1 {
		return errExtendedMeanwhile
	}
	if !t.rb.Status.Running() {
		return fmt.Errorf("%w: runbook %s is %s; only a running runbook can be extended", ErrConflict, t.rb.ID, t.rb.Status)
	}
	if err := t.admitSteps(len(x.added)); err != nil {
		return err
	}
	t.mutate(rbtype.EventRunbookExtended, rbtype.MutationExtend, c.actor, nil,
		RunbookExtendedData{Source: x.source, Steps: x.keys, PlanHash: x.plan.PlanHash, Version: x.version, PolicyHash: x.policyHash})
	for _, ev := range x.gated {
		ev.RunbookID = t.rb.ID
		t.events = append(t.events, ev)
	}
	t.newSteps, t.newEdges = x.added, x.edges
	rc := t.runbookChange()
	rc.Plan, rc.PlanHash, rc.Version, rc.Inputs = x.planJSON, x.plan.PlanHash, x.version, x.inputs
	return nil
}
