package machine

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// ExtendRunbook is an extension: the new steps and edges, the mutation
// and its event, the new plan, version and inputs. The new steps take part
// from the next round on, once stored; until then the runbook does not
// settle (transition.settle).
type ExtendRunbook struct {
	Ext   *CompiledExtension
	Actor string
}

func (c *ExtendRunbook) apply(t *transition) error {
	x := c.Ext
	if t.Rb.Version != x.Version-1 {
		return ErrExtendedMeanwhile
	}
	if !t.Rb.Status.Running() {
		return fmt.Errorf("%w: runbook %s is %s; only a running runbook can be extended", rbtype.ErrConflict, t.Rb.ID, t.Rb.Status)
	}
	if err := t.admitSteps(len(x.Added)); err != nil {
		return err
	}
	t.mutate(rbtype.EventRunbookExtended, rbtype.MutationExtend, c.Actor, nil,
		RunbookExtendedData{Source: x.Source, Steps: x.Keys, PlanHash: x.Plan.PlanHash, Version: x.Version, PolicyHash: x.PolicyHash})
	for _, ev := range x.Gated {
		ev.RunbookID = t.Rb.ID
		t.events = append(t.events, ev)
	}
	t.newSteps, t.newEdges = x.Added, x.Edges
	rc := t.runbookChange()
	rc.Plan, rc.PlanHash, rc.Version, rc.Inputs = x.PlanJSON, x.Plan.PlanHash, x.Version, x.Inputs
	return nil
}

// ErrExtendedMeanwhile: another extension changed the runbook between the
// compile and the lock.
var ErrExtendedMeanwhile = errors.New("the runbook was extended meanwhile")

// CompiledExtension is a compiled extension of one version of a runbook.
type CompiledExtension struct {
	RunbookID uuid.UUID
	Source    string
	Plan      *compiler.Plan
	PlanJSON  []byte
	Added     []rbtype.NewStep
	Edges     []rbtype.Edge
	Keys      []string
	Inputs    json.RawMessage
	Version   int
	// PolicyHash and gated are what admission decided of the new steps
	// (the policy of the day: docs/design/semantics.md section 10).
	PolicyHash string
	Gated      []rbtype.Event
}
