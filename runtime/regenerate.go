package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Regeneration asks for a finished runbook to run again as a new one of
// its lineage (docs/design/semantics.md section 6).
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

// Regenerate starts a new runbook with a finished runbook's plan, its
// inputs (some overridden) and a lineage naming the finished one as its
// parent. Its steps whose verbs regenerate (pure or stable, with no effect
// outside the daemon's database) run afresh under new keys; the others
// inherit the parent's keys, so that an effect the parent had (a send)
// returns its receipt and does not happen again. A runbook still running
// is a conflict: regenerating it would race its own steps.
func (e *Engine) Regenerate(ctx context.Context, parentID uuid.UUID, r Regeneration) (*apitype.Submitted, error) {
	r.Actor, r.note = actorOf(ctx, r.Actor)
	if problem := machine.CheckCorrelationID(r.CorrelationID); problem != "" {
		return nil, fmt.Errorf("%w: the correlation id %s", rbtype.ErrInvalid, problem)
	}
	var out *apitype.Submitted
	var done advanced
	err := inTx(ctx, e.store, func(tx driver.Tx) error {
		ids := []uuid.UUID{parentID}
		if err := tx.LockRunbooks(ctx, ids); err != nil {
			return err
		}
		loaded, err := tx.LoadForAdvance(ctx, ids, driver.LoadOptions{AllSteps: true})
		if err != nil {
			return err
		}
		if len(loaded.Runbooks) != 1 || !sees(ctx, loaded.Runbooks[0].Tenant) {
			return driver.ErrNotFound
		}
		parent := loaded.Runbooks[0]
		if parent.Status.Running() {
			return fmt.Errorf("%w: runbook %s is %s; regenerate it once it has finished (or cancel it first)", rbtype.ErrConflict, parent.ID, parent.Status)
		}
		plans, err := tx.Plans(ctx, ids)
		if err != nil {
			return err
		}
		parent.Plan = plans[parentID]
		plan, err := e.planOf(parent)
		if err != nil {
			return err
		}
		n, err := e.regeneration(ctx, parent, plan, loaded.Steps, r)
		if err != nil {
			return err
		}
		out, err = e.createRunbook(ctx, tx, n, r.IdempotencyKey)
		if err != nil || !out.Created {
			return err
		}
		// What the regeneration records on its parent goes through the
		// parent's state machine, with the state read above.
		done, err = e.advanceIn(ctx, tx, ids, machine.Inputs{Hold: true, Commands: map[uuid.UUID]machine.Command{
			parentID: &machine.RecordRegeneration{Child: out.ID, Lineage: n.Lineage, By: r.Actor},
		}}, loaded)
		return err
	})
	if errors.Is(err, driver.ErrNotFound) {
		return nil, e.noRunbook(ctx, parentID)
	}
	if err != nil {
		return nil, err
	}
	if done.settled != nil {
		e.committed(ctx, done)
	}
	if out.Created {
		e.wakeUp(out.ID) // the new runbook is due at once
	}
	return out, nil
}

// regeneration is the new runbook a regeneration of parent stores. It is
// admitted as a submission is, under the policy of the day and the scope
// of whoever asks (docs/design/semantics.md section 10); the parent's own
// budget, if it asked one, goes with it.
func (e *Engine) regeneration(ctx context.Context, parent *driver.Runbook, plan *machine.PlanInfo, parentSteps []*driver.Step, r Regeneration) (driver.NewRunbook, error) {
	// A regeneration runs its loops over lists of its own: it starts from
	// the plan as it was before its parent's expanded.
	frozen, planJSON, planHash := plan, parent.Plan, parent.PlanHash
	if base := machine.BeforeExpansion(plan.Plan); base != plan.Plan {
		frozen, planJSON, planHash = machine.NewPlanInfo(base), base.JSON(), base.PlanHash
	}
	plan = frozen
	adm, err := e.admit(ctx, parent.Tenant, plan.Plan, plan.Plan.Steps)
	if err != nil {
		return driver.NewRunbook{}, err
	}
	if err := checkMode(adm.tenant, parent.Mode); err != nil {
		return driver.NewRunbook{}, err
	}
	inputs := map[string]any{}
	if err := json.Unmarshal(parent.Inputs, &inputs); err != nil {
		return driver.NewRunbook{}, fmt.Errorf("runbook %s: its stored inputs do not decode: %w", parent.ID, err)
	}
	maps.Copy(inputs, r.Inputs)
	if err := checkInputs(plan.Plan.Inputs, inputs, nil); err != nil {
		return driver.NewRunbook{}, err
	}
	if err := checkInputsFit(plan.Plan, inputs); err != nil {
		return driver.NewRunbook{}, err
	}
	encoded, err := json.Marshal(inputs)
	if err != nil {
		return driver.NewRunbook{}, fmt.Errorf("%w: inputs do not marshal: %v", rbtype.ErrInvalid, err)
	}
	lineage := driver.Lineage{Root: parent.Lineage.RootOf(parent.ID), Parent: parent.ID, Generation: parent.Lineage.Generation + 1}
	key := r.IdempotencyKey
	if key == "" {
		sum := sha256.Sum256(encoded)
		key = "regenerate:" + parent.ID.String() + ":" + hex.EncodeToString(sum[:])
	}
	steps, err := machine.NewSteps(plan.Plan.Steps, 0)
	if err != nil {
		return driver.NewRunbook{}, fmt.Errorf("%w: %v", rbtype.ErrInvalid, err)
	}
	adm.gate(steps)
	// Steps that do not regenerate inherit the key their parent used, and
	// so the root's: by induction every generation's is the root's.
	had := make(map[string]string, len(parentSteps))
	for _, s := range parentSteps {
		had[s.Key] = s.IdempotencyKey
	}
	for i := range steps {
		if ps := plan.Steps[steps[i].Key]; ps != nil && !machine.Regenerates(&ps.Execution) {
			steps[i].IdempotencyKey = had[steps[i].Key]
		}
	}
	key = tenantKey(parent.Tenant, key)
	n := driver.NewRunbook{
		Tenant: parent.Tenant, Actor: r.Actor, Plan: planJSON, PlanHash: planHash, Inputs: encoded, Mode: parent.Mode,
		Status: rbtype.RunbookExecuting, RequestKey: key, Lineage: lineage, WorkerID: e.workerID,
		Steps: steps, Edges: machine.EdgesOf(plan.Plan.Edges, nil), EdgesInPlan: true,
		Trace: machine.NewTrace(r.Parent, r.CorrelationID), PolicyHash: adm.tenant.Hash(), Budget: parent.Budget, Events: adm.events,
		Scope: submitterScope(ctx),
	}
	if r.CorrelationID == "" {
		n.Trace.CorrelationID = machine.TraceOf(parent).CorrelationID
	}
	n.SubmittedData, err = json.Marshal(machine.RunbookSubmittedData{Actor: r.Actor, Note: r.note, Mode: parent.Mode, PlanHash: planHash,
		PolicyHash: adm.tenant.Hash(), Budget: parent.Budget})
	return n, err
}
