package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/runtime/driver"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// Cancel stops a runbook: its active invocations are cancelled, every step
// not yet final is cancelled, and later notifications for it are kept and
// ignored. Completed work stays readable. Cancelling a cancelled runbook
// is a no-op; a finished one is a conflict.
func (e *Engine) Cancel(ctx context.Context, runbookID uuid.UUID, by string) error {
	return e.locked(ctx, runbookID, func(tx driver.Tx, rb *driver.Runbook, steps []*driver.Step) error {
		if rb.Status == rbtype.RunbookCancelled {
			return nil
		}
		invs, err := tx.ActiveInvocations(ctx, []uuid.UUID{runbookID})
		if err != nil {
			return err
		}
		c, err := cancelRunbook(time.Now(), e.workerID, rb, steps, invs, by)
		if err != nil {
			return err
		}
		return tx.ApplyChange(ctx, c)
	})
}

// cancelRunbook is the change a cancellation makes: the invocations
// cancelled, the steps not yet final cancelled, their events, and the
// runbook finished as cancelled.
func cancelRunbook(now time.Time, worker string, rb *driver.Runbook, steps []*driver.Step, invs []driver.Invocation, by string) (driver.Change, error) {
	if !rb.Status.Running() {
		return driver.Change{}, fmt.Errorf("%w: runbook %s is already %s", ErrConflict, rb.ID, rb.Status)
	}
	c := driver.Change{RunbookID: rb.ID, FinishStatus: rbtype.InvocationCancelled}
	for _, inv := range invs {
		c.Finish = append(c.Finish, inv.InvocationID)
	}
	for _, s := range steps {
		if s.Status.Done() {
			continue
		}
		s.Status, s.FinishedAt, s.NextAttemptAt = rbtype.StepCancelled, &now, nil
		c.Steps = append(c.Steps, s.Change())
		ev, err := newEvent(rb.ID, rbtype.EventStepCancelled, worker, s, nil)
		if err != nil {
			return driver.Change{}, err
		}
		c.Events = append(c.Events, ev)
	}
	ev, err := newEvent(rb.ID, rbtype.EventRunbookCancelled, worker, nil, RunbookCancelledData{By: by})
	if err != nil {
		return driver.Change{}, err
	}
	c.Events = append(c.Events, ev)
	status, code, msg := rbtype.RunbookCancelled, rbtype.CodeCancelled, "cancelled by "+by
	c.Runbook = &driver.RunbookChange{ID: rb.ID, Status: &status, ErrorCode: &code, ErrorMessage: &msg, Finished: true, SetWake: true}
	return c, nil
}
