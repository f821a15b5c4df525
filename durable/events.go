package durable

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
)

// appendEventsSQL adds events to the ledger, in order, in one statement.
// Each is stamped with the clock at insertion, not the transaction's
// start, so the ledger measures latencies truthfully.
const appendEventsSQL = `
	INSERT INTO runbook_events (runbook_id, type, step_key, attempt, worker_id, data, at)
	SELECT r, ty, s, a, w, d::jsonb, clock_timestamp()
	FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[]) WITH ORDINALITY
		AS u(r, ty, s, a, w, d, n)
	ORDER BY n`

func eventArgs(events []driver.Event) []any {
	n := len(events)
	runbooks := make([][16]byte, n)
	types := make([]string, n)
	steps := make(pgtype.FlatArray[pgtype.Text], n)
	attempts := make(pgtype.FlatArray[pgtype.Int4], n)
	workers := make(pgtype.FlatArray[pgtype.Text], n)
	data := make(pgtype.FlatArray[pgtype.Text], n)
	for i, e := range events {
		runbooks[i], types[i], steps[i], workers[i], data[i] = e.RunbookID, string(e.Type), nullableText(e.StepKey), nullableText(e.WorkerID), nullableJSON(e.Data)
		attempts[i] = pgtype.Int4{Int32: int32(e.Attempt), Valid: e.Attempt > 0}
	}
	return []any{runbooks, types, steps, attempts, workers, data}
}

// Events reads a runbook's ledger after event afterID, oldest first.
func (s *Store) Events(ctx context.Context, runbookID uuid.UUID, afterID int64, limit int) ([]driver.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	// Seq is the event's place in its runbook's ledger: those before the
	// page, counted on the (runbook_id, id) index, plus its place in it.
	rows, err := s.pool.Query(ctx, `
		SELECT id, runbook_id, type, coalesce(step_key, ''), coalesce(attempt, 0), coalesce(worker_id, ''), data, at,
			(SELECT count(*) FROM runbook_events b WHERE b.runbook_id = $1 AND b.id <= $2) + row_number() OVER (ORDER BY id)
		FROM runbook_events WHERE runbook_id = $1 AND id > $2 ORDER BY id LIMIT $3`, runbookID, afterID, limit)
	if err != nil {
		return nil, translate(err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Event, error) {
		var e driver.Event
		err := r.Scan(&e.ID, &e.RunbookID, &e.Type, &e.StepKey, &e.Attempt, &e.WorkerID, &e.Data, &e.At, &e.Seq)
		return e, err
	})
	return events, translate(err)
}
