package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// RunbookClosedData is the data of RUNBOOK_CLOSED and the payload of its
// mutation.
type RunbookClosedData struct {
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
}

// Close lets a runbook held open (submitted with HoldOpen) finish: it
// becomes executing, and ends as its steps have ended or will end
// (SEMANTICS.md section 8). A runbook that is not held open is a
// conflict.
func (e *Engine) Close(ctx context.Context, runbookID uuid.UUID, by string) error {
	by, note := actorOf(ctx, by)
	return e.lockedRunbook(ctx, runbookID, func(tx driver.Tx, rb *driver.Runbook) error {
		c, err := closeRunbook(time.Now(), e.workerID, rb, by, note)
		if err != nil {
			return err
		}
		return tx.ApplyChange(ctx, c)
	})
}

// closeRunbook is the change a close makes: the runbook executing and due,
// so that the next advance settles it, its event and mutation.
func closeRunbook(_ time.Time, worker string, rb *driver.Runbook, by, note string) (driver.Change, error) {
	if rb.Status != rbtype.RunbookInProgress {
		return driver.Change{}, fmt.Errorf("%w: runbook %s is %s, not held open; only an in_progress runbook can be closed", ErrConflict, rb.ID, rb.Status)
	}
	data := RunbookClosedData{By: by, Note: note}
	ev, m, err := logged(rb.ID, rbtype.EventRunbookClosed, rbtype.MutationClose, worker, by, nil, data)
	if err != nil {
		return driver.Change{}, err
	}
	status := rbtype.RunbookExecuting
	return driver.Change{
		RunbookID: rb.ID,
		Events:    []driver.Event{ev},
		Mutations: []driver.Mutation{m},
		Runbook:   &driver.RunbookChange{ID: rb.ID, Status: &status},
		Wake:      true,
	}, nil
}
