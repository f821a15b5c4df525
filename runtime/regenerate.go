package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// Regeneration asks for a finished runbook to run again as a new one of
// its lineage (SEMANTICS.md section 6).
type Regeneration struct {
	// Inputs override the parent's inputs, name by name; the rest are the
	// parent's.
	Inputs map[string]any
	// IdempotencyKey dedupes the request as a submission's does. Without
	// it the regeneration is keyed by its parent and inputs: a repeat
	// returns the same new runbook, until that one fails.
	IdempotencyKey string
	Actor          string
	// Parent and CorrelationID are the request's trace context, as a
	// Submission's. A regeneration is a request of its own: it begins its
	// own trace unless Parent names one, and its span links to its
	// parent runbook's. Without a CorrelationID it keeps its parent
	// runbook's, since it redoes the same work.
	Parent        trace.SpanContext
	CorrelationID string
	// note is the claimed Actor when the token's actor differs.
	note string
}

// RunbookRegeneratedData is the data of RUNBOOK_REGENERATED: on the new
// runbook its parent and root, on the parent the new runbook (also the
// payload of the parent's mutation).
type RunbookRegeneratedData struct {
	Root       *uuid.UUID `json:"root,omitempty"`
	Parent     *uuid.UUID `json:"parent,omitempty"`
	Child      *uuid.UUID `json:"child,omitempty"`
	Generation int        `json:"generation"`
	By         string     `json:"by,omitempty"`
	Note       string     `json:"note,omitempty"`
}

// Regenerate starts a new runbook with a finished runbook's plan, its
// inputs (some overridden) and a lineage naming the finished one as its
// parent. Its steps whose verbs regenerate (pure or stable, with no effect
// outside the daemon's database) run afresh under new keys; the others
// inherit the parent's keys, so that an effect the parent had (a send)
// returns its receipt and does not happen again. A runbook still running
// is a conflict: regenerating it would race its own steps.
func (e *Engine) Regenerate(ctx context.Context, parentID uuid.UUID, r Regeneration) (*Submitted, error) {
	r.Actor, r.note = actorOf(ctx, r.Actor)
	if problem := CheckCorrelationID(r.CorrelationID); problem != "" {
		return nil, fmt.Errorf("%w: the correlation id %s", ErrInvalid, problem)
	}
	var out *Submitted
	err := e.locked(ctx, parentID, func(tx driver.Tx, parent *driver.Runbook, parentSteps []*driver.Step) error {
		if parent.Status.Running() {
			return fmt.Errorf("%w: runbook %s is %s; regenerate it once it has finished (or cancel it first)", ErrConflict, parent.ID, parent.Status)
		}
		plan, err := e.planOf(parent)
		if err != nil {
			return err
		}
		n, err := e.regeneration(parent, plan, parentSteps, r)
		if err != nil {
			return err
		}
		out, err = createRunbook(ctx, tx, n, r.IdempotencyKey)
		if err != nil || !out.Created {
			return err
		}
		c, err := regenerated(e.workerID, parent, n.Lineage, out.ID, r.Actor)
		if err != nil {
			return err
		}
		return tx.ApplyChange(ctx, c)
	})
	return out, err
}

// regeneration is the new runbook a regeneration of parent stores.
func (e *Engine) regeneration(parent *driver.Runbook, plan *planInfo, parentSteps []*driver.Step, r Regeneration) (driver.NewRunbook, error) {
	inputs := map[string]any{}
	if err := json.Unmarshal(parent.Inputs, &inputs); err != nil {
		return driver.NewRunbook{}, fmt.Errorf("runbook %s: its stored inputs do not decode: %w", parent.ID, err)
	}
	maps.Copy(inputs, r.Inputs)
	if err := checkInputs(plan.plan.Inputs, inputs, nil); err != nil {
		return driver.NewRunbook{}, err
	}
	if err := checkInputsFit(plan.plan, inputs); err != nil {
		return driver.NewRunbook{}, err
	}
	encoded, err := json.Marshal(inputs)
	if err != nil {
		return driver.NewRunbook{}, fmt.Errorf("%w: inputs do not marshal: %v", ErrInvalid, err)
	}
	lineage := driver.Lineage{Root: parent.Lineage.RootOf(parent.ID), Parent: parent.ID, Generation: parent.Lineage.Generation + 1}
	key := r.IdempotencyKey
	if key == "" {
		sum := sha256.Sum256(encoded)
		key = "regenerate:" + parent.ID.String() + ":" + hex.EncodeToString(sum[:])
	}
	steps, err := newSteps(plan.plan.Steps, 0)
	if err != nil {
		return driver.NewRunbook{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// Steps that do not regenerate inherit the key their parent used, and
	// so the root's: by induction every generation's is the root's.
	had := make(map[string]string, len(parentSteps))
	for _, s := range parentSteps {
		had[s.Key] = s.IdempotencyKey
	}
	for i := range steps {
		if ps := plan.steps[steps[i].Key]; ps != nil && !regenerates(&ps.Execution) {
			steps[i].IdempotencyKey = had[steps[i].Key]
		}
	}
	key = tenantKey(parent.Tenant, key)
	n := driver.NewRunbook{
		ID: RunbookIDFor(key), Tenant: parent.Tenant, Actor: r.Actor, Plan: parent.Plan, PlanHash: parent.PlanHash, Inputs: encoded, Mode: parent.Mode,
		Status: rbtype.RunbookExecuting, RequestKey: key, Lineage: lineage, WorkerID: e.workerID,
		Steps: steps, Edges: edgesOf(plan.plan.Edges, nil),
		Trace: newTrace(r.Parent, r.CorrelationID),
	}
	if r.CorrelationID == "" {
		n.Trace.CorrelationID = traceOf(parent).correlationID
	}
	n.SubmittedData, err = json.Marshal(RunbookSubmittedData{Actor: r.Actor, Note: r.note, Mode: parent.Mode, PlanHash: parent.PlanHash})
	return n, err
}

// regenerated is what a regeneration records: RUNBOOK_REGENERATED on the
// new runbook (its parent and root) and on the parent (the new runbook),
// with a mutation row on the parent saying who asked.
func regenerated(worker string, parent *driver.Runbook, lineage driver.Lineage, child uuid.UUID, by string) (driver.Change, error) {
	onChild, err := newEvent(child, rbtype.EventRunbookRegenerated, worker, nil,
		RunbookRegeneratedData{Root: &lineage.Root, Parent: &lineage.Parent, Generation: lineage.Generation, By: by})
	if err != nil {
		return driver.Change{}, err
	}
	onParent, m, err := logged(parent.ID, rbtype.EventRunbookRegenerated, rbtype.MutationRegenerate, worker, by, nil,
		RunbookRegeneratedData{Child: &child, Generation: lineage.Generation, By: by})
	if err != nil {
		return driver.Change{}, err
	}
	return driver.Change{RunbookID: parent.ID, Events: []driver.Event{onParent, onChild}, Mutations: []driver.Mutation{m}}, nil
}
