package runtime

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

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
