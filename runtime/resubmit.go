package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// A submission after a failure (docs/design/semantics.md section 16). The
// same plan and inputs submitted again without an Idempotency-Key, after
// the runbook they started failed, run again as a new runbook; that
// runbook joins the failed one's lineage, as a regeneration does (the next
// generation, its parent the failed runbook), so its external_call and
// human_process steps keep their keys and an effect that happened returns
// its receipt instead of happening again. new_lineage (rbd submit --new)
// asks for a fresh lineage instead, and its answer says that effects may
// repeat.

// joinFailedLineage makes n, the run of a plan and inputs that comes after
// failed, the next generation of failed's lineage: its steps that do not
// regenerate inherit failed's keys (and so, by induction, the root's), and
// its ledger says where it came from (RUNBOOK_REGENERATED, naming root
// and parent, with the submitter).
func (e *Engine) joinFailedLineage(ctx context.Context, tx driver.Tx, n *driver.NewRunbook, failed *driver.Runbook, events []rbtype.Event) error {
	loaded, err := tx.LoadForAdvance(ctx, []uuid.UUID{failed.ID}, driver.LoadOptions{AllSteps: true})
	if err != nil {
		return err
	}
	had := map[string]string{}
	for _, s := range loaded.Steps {
		if s.RunbookID == failed.ID && s.IdempotencyKey != "" {
			had[s.Key] = s.IdempotencyKey
		}
	}
	steps := make([]driver.NewStep, len(n.Steps))
	copy(steps, n.Steps)
	for i := range steps {
		key, ok := had[steps[i].Key]
		if !ok {
			continue
		}
		var exec verbs.Execution
		if err := json.Unmarshal(steps[i].Execution, &exec); err != nil {
			return fmt.Errorf("step %q: its execution block does not decode: %w", steps[i].Key, err)
		}
		if !machine.Regenerates(&exec) {
			steps[i].IdempotencyKey = key
		}
	}
	n.Steps = steps
	n.Lineage = driver.Lineage{Root: failed.Lineage.RootOf(failed.ID), Parent: failed.ID, Generation: failed.Lineage.Generation + 1}
	root, parent := n.Lineage.Root, n.Lineage.Parent
	ev, err := machine.NewEvent(uuid.Nil, rbtype.EventRunbookRegenerated, e.workerID, nil, machine.RunbookRegeneratedData{
		Root: &root, Parent: &parent, Generation: n.Lineage.Generation, By: n.Actor,
		Note: "submitted again after " + failed.ID.String() + " failed: the same plan and inputs join its lineage"})
	if err != nil {
		return err
	}
	n.Events = append(append([]rbtype.Event(nil), events...), ev)
	return nil
}

// JoinedMessage is what a submission's answer says when it joined a
// failed runbook's lineage.
func JoinedMessage(failed, root uuid.UUID, generation int) string {
	return fmt.Sprintf("runbook %s with the same plan and inputs failed; this run joins its lineage (root %s, generation %d): "+
		"effects that happened return their receipts instead of happening again (submit with new_lineage, rbd submit --new, to start afresh)",
		failed, root, generation)
}

// NewLineageMessage is what a submission's answer says when it asked for a
// fresh lineage.
const NewLineageMessage = "a new lineage (new_lineage): its steps have keys of their own, so effects that earlier runs of this plan and inputs had may happen again"
