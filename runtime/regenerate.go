package runtime

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

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

// recordRegeneration is what a regeneration records: RUNBOOK_REGENERATED
// on the new runbook (its parent and root) and on the parent (the new
// runbook), with a mutation row on the parent saying who asked. The new
// runbook is stored by then (createRunbook).
type recordRegeneration struct {
	child   uuid.UUID
	lineage driver.Lineage
	by      string
}

func (c *recordRegeneration) apply(t *transition) error {
	if t.rb.Status.Running() {
		return fmt.Errorf("%w: runbook %s is %s; regenerate it once it has finished (or cancel it first)", ErrConflict, t.rb.ID, t.rb.Status)
	}
	t.mutate(rbtype.EventRunbookRegenerated, rbtype.MutationRegenerate, c.by, nil,
		RunbookRegeneratedData{Child: &c.child, Generation: c.lineage.Generation, By: c.by})
	onChild, err := newEvent(c.child, rbtype.EventRunbookRegenerated, t.m.worker, nil,
		RunbookRegeneratedData{Root: &c.lineage.Root, Parent: &c.lineage.Parent, Generation: c.lineage.Generation, By: c.by})
	if err != nil {
		return err
	}
	t.events = append(t.events, onChild)
	return nil
}
