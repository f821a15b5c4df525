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
		ext, err := e.compileExtension(rb, x)
		if err != nil {
			return nil, err
		}
		var out *Extended
		err = e.lockedRunbook(ctx, runbookID, func(tx driver.Tx, now *driver.Runbook) error {
			if now.Version != rb.Version {
				return errExtendedMeanwhile
			}
			if !now.Status.Running() {
				return fmt.Errorf("%w: runbook %s is %s; only a running runbook can be extended", ErrConflict, runbookID, now.Status)
			}
			c, err := ext.change(e.workerID, x.Actor)
			if err != nil {
				return err
			}
			if err := tx.ApplyChange(ctx, c); err != nil {
				return err
			}
			out = &Extended{Steps: ext.keys, Version: ext.version}
			return nil
		})
		if errors.Is(err, errExtendedMeanwhile) && try < extendTries {
			continue
		}
		if errors.Is(err, errExtendedMeanwhile) {
			return nil, fmt.Errorf("%w: runbook %s kept changing while the extension compiled; try again", ErrConflict, runbookID)
		}
		return out, err
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
	added     []driver.NewStep
	edges     []driver.Edge
	keys      []string
	inputs    json.RawMessage
	version   int
}

// compileExtension compiles x against the runbook as read (its plan, its
// inputs and its version), without any lock.
func (e *Engine) compileExtension(rb *driver.Runbook, x Extension) (*extension, error) {
	if !rb.Status.Running() {
		return nil, fmt.Errorf("%w: runbook %s is %s; only a running runbook can be extended", ErrConflict, rb.ID, rb.Status)
	}
	base, err := compiler.DecodePlan(rb.Plan)
	if err != nil {
		return nil, err
	}
	plan, diags := compiler.ExtendSource(base, x.Filename, x.Source, e.cfg.Catalogue)
	if diags.HasErrors() {
		return nil, &CompileError{Diagnostics: diags}
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
	ext := &extension{runbookID: rb.ID, source: x.Filename, plan: plan, version: rb.Version + 1,
		edges: edgesOf(plan.Edges, func(to string) bool { return !existing[to] })}
	if ext.inputs, err = json.Marshal(inputs); err != nil {
		return nil, fmt.Errorf("%w: inputs do not marshal: %v", ErrInvalid, err)
	}
	if ext.added, err = newSteps(added, len(base.Steps)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	ext.keys = make([]string, len(added))
	for i, s := range added {
		ext.keys[i] = s.Key
	}
	return ext, nil
}

// change is what the extension writes: the new steps and edges, the
// mutation and its event, the new plan, version and inputs, and a wake-up.
func (x *extension) change(worker, actor string) (driver.Change, error) {
	data := RunbookExtendedData{Source: x.source, Steps: x.keys, PlanHash: x.plan.PlanHash, Version: x.version}
	ev, m, err := logged(x.runbookID, rbtype.EventRunbookExtended, rbtype.MutationExtend, worker, actor, nil, data)
	if err != nil {
		return driver.Change{}, err
	}
	return driver.Change{
		RunbookID: x.runbookID,
		NewSteps:  x.added,
		NewEdges:  x.edges,
		Mutations: []driver.Mutation{m},
		Events:    []driver.Event{ev},
		Runbook: &driver.RunbookChange{
			ID: x.runbookID, Plan: x.plan.JSON(), PlanHash: x.plan.PlanHash, Version: x.version, Inputs: x.inputs,
		},
		Wake: true,
	}, nil
}

// locked runs fn under the runbook's lock with its row and steps loaded.
func (e *Engine) locked(ctx context.Context, id uuid.UUID, fn func(driver.Tx, *driver.Runbook, []*driver.Step) error) error {
	return e.lockedRunbook(ctx, id, func(tx driver.Tx, rb *driver.Runbook) error {
		steps, err := tx.Steps(ctx, id)
		if err != nil {
			return err
		}
		return fn(tx, rb, steps)
	})
}

// lockedRunbook runs fn under the runbook's lock with its row loaded, for
// the changes that do not look at its steps (an extension's version check,
// a close): a large runbook's steps are not read for nothing.
func (e *Engine) lockedRunbook(ctx context.Context, id uuid.UUID, fn func(driver.Tx, *driver.Runbook) error) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		if err := tx.LockRunbooks(ctx, []uuid.UUID{id}); err != nil {
			return err
		}
		rb, err := tx.Runbook(ctx, id)
		if err != nil {
			return err
		}
		if !sees(ctx, rb.Tenant) {
			return driver.ErrNotFound // another tenant's: as if it were not there
		}
		return fn(tx, rb)
	})
	if errors.Is(err, driver.ErrNotFound) {
		return e.noRunbook(ctx, id)
	}
	return err
}
