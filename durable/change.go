package durable

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/driver"
)

// ApplyChange writes what a gate's decision, a cancellation or an
// extension changed in one runbook, in one round trip. The statements go
// in a fixed order (invocations, steps, new steps and edges, mutations,
// events, the runbook row, the wake-up), so the same change always sends
// the same batch.
func (t *Tx) ApplyChange(ctx context.Context, c driver.Change) error {
	var b pgx.Batch
	ignore := func(pgconn.CommandTag) error { return nil }
	if len(c.Finish) > 0 {
		b.Queue(finishInvocationsSQL, c.Finish, string(c.FinishStatus)).Exec(ignore)
	}
	for _, u := range c.Invocations {
		b.Queue(updateInvocationSQL, u.ID, nullString(u.ExternalID), u.TimeoutAt, nullJSON(u.Context)).Exec(ignore)
	}
	if len(c.Steps) > 0 {
		// A gate's decision, a cancellation or an extension leaves leases
		// as they are: a cancelled step's call still gives its lease up
		// with its outcome.
		b.Queue(updateStepsSQL, stepChangeArgs(c.Steps, nil, "", time.Time{})...).Exec(ignore)
	}
	if len(c.NewSteps) >= copyThreshold {
		// COPY is a round trip of its own; what a large extension saves
		// on parsing rows is worth it.
		if err := t.copySteps(ctx, c.RunbookID, c.NewSteps); err != nil {
			return err
		}
	} else {
		queueInsertSteps(&b, c.RunbookID, c.NewSteps)
	}
	queueInsertEdges(&b, c.RunbookID, c.NewEdges)
	for _, m := range c.Mutations {
		b.Queue(appendMutationSQL, m.RunbookID, m.Actor, string(m.Kind), string(jsonOrEmpty(m.Payload))).Exec(ignore)
	}
	if len(c.Events) > 0 {
		b.Queue(appendEventsSQL, eventArgs(c.Events)...).Exec(ignore)
	}
	if c.Runbook != nil {
		b.Queue(updateRunbookSQL, runbookChangeArgs(*c.Runbook)...).Exec(ignore)
	}
	if c.Wake {
		t.queueWake(&b, c.RunbookID)
	}
	if b.Len() == 0 {
		return nil
	}
	return translate(t.tx.SendBatch(ctx, &b).Close())
}
