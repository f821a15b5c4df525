package machine

import (
	"fmt"

	"github.com/google/uuid"

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

// RecordRegeneration is what a regeneration records: RUNBOOK_REGENERATED
// on the new runbook (its parent and root) and on the parent (the new
// runbook), with a mutation row on the parent saying who asked. The new
// runbook is stored by then (createRunbook).
type RecordRegeneration struct {
	Child   uuid.UUID
	Lineage rbtype.Lineage
	By      string
}

func (c *RecordRegeneration) apply(t *transition) error {
	if t.Rb.Status.Running() {
		return fmt.Errorf("%w: runbook %s is %s; regenerate it once it has finished (or cancel it first)", rbtype.ErrConflict, t.Rb.ID, t.Rb.Status)
	}
	t.mutate(rbtype.EventRunbookRegenerated, rbtype.MutationRegenerate, c.By, nil,
		RunbookRegeneratedData{Child: &c.Child, Generation: c.Lineage.Generation, By: c.By})
	onChild, err := NewEvent(c.Child, rbtype.EventRunbookRegenerated, t.m.Worker, nil,
		RunbookRegeneratedData{Root: &c.Lineage.Root, Parent: &c.Lineage.Parent, Generation: c.Lineage.Generation, By: c.By})
	if err != nil {
		return err
	}
	t.events = append(t.events, onChild)
	return nil
}
