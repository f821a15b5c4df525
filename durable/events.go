package durable

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The event ledger (docs/design/runtime.md, "The event ledger") keeps the
// events one statement appends for a runbook in one row of
// runbook_event_rows, a JSON array in id order. Each event keeps its own
// id, from runbook_event_ids, and its own clock; readers unnest the rows
// and see one event a row, as they did when each was a row of its own.

// appendEventsSQL adds events to the ledger, in order, in one statement:
// one row per runbook. Each event is stamped with the clock at insertion,
// not the transaction's start, so the ledger measures latencies
// truthfully, and numbered in order from runbook_event_ids.
const appendEventsSQL = `
	INSERT INTO runbook_event_rows (runbook_id, first_id, last_id, n, events)
	SELECT r, min(id), max(id), count(*), jsonb_agg(
		jsonb_strip_nulls(jsonb_build_object('id', id, 'type', ty, 'step_key', s, 'attempt', a, 'worker_id', w, 'at', at))
		|| CASE WHEN d IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('data', d::jsonb) END
		ORDER BY id)
	FROM (SELECT r, ty, s, a, w, d, nextval('runbook_event_ids') AS id, clock_timestamp() AS at
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[]) WITH ORDINALITY
			AS u(r, ty, s, a, w, d, n)
		ORDER BY n) e
	GROUP BY r`

// knownEventTypes are the types the ledger admits: rbtype.EventTypes.
// The check constraint of runbook_events, one row an event, refused any
// other; a row of runbook_event_rows holds many, so the check is made
// here, before the statement is sent (TestTheSchemaAdmitsEveryStatusAndEventType
// writes every type; TestTheLedgerRefusesAnUnknownEventType one too many).
var knownEventTypes = func() map[rbtype.EventType]bool {
	m := make(map[rbtype.EventType]bool, len(rbtype.EventTypes))
	for _, t := range rbtype.EventTypes {
		m[t] = true
	}
	return m
}()

// checkEventTypes refuses events of a type the ledger does not admit.
func checkEventTypes(events []driver.Event) error {
	for _, e := range events {
		if !knownEventTypes[e.Type] {
			return fmt.Errorf("durable: event type %q is not one the ledger admits (rbtype.EventTypes)", e.Type)
		}
	}
	return nil
}

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

// eventColumns are an event's columns, from x, an element of a row's
// events, in the order scanEvent reads them.
const eventColumns = `(x.e->>'id')::bigint, b.runbook_id, x.e->>'type', coalesce(x.e->>'step_key', ''),
	coalesce((x.e->>'attempt')::int, 0), coalesce(x.e->>'worker_id', ''), x.e->'data', (x.e->>'at')::timestamptz`

// eventsAfterSQL reads a runbook's events after an event id, oldest
// first. The rows are found on (runbook_id, last_id) in order; within a
// row, the array's order is the events'. Seq, the event's place in its
// runbook's ledger, is the count of the events up to the one asked after
// plus its place in the page.
const eventsAfterSQL = `
	SELECT ` + eventColumns + `,
		(SELECT coalesce(sum(c.n), 0) FROM runbook_event_rows c WHERE c.runbook_id = $1 AND c.last_id <= $2)
		+ (SELECT count(*) FROM runbook_event_rows c, jsonb_array_elements(c.events) y(e)
			WHERE c.runbook_id = $1 AND c.last_id > $2 AND c.first_id <= $2 AND (y.e->>'id')::bigint <= $2)
		+ row_number() OVER (ORDER BY b.last_id, x.k)
	FROM runbook_event_rows b, jsonb_array_elements(b.events) WITH ORDINALITY x(e, k)
	WHERE b.runbook_id = $1 AND b.last_id > $2 AND (x.e->>'id')::bigint > $2
	ORDER BY b.last_id, x.k LIMIT $3`

// Events reads a runbook's ledger after event afterID, oldest first.
func (s *Store) Events(ctx context.Context, runbookID uuid.UUID, afterID int64, limit int) ([]driver.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.pool.Query(ctx, eventsAfterSQL, runbookID, afterID, limit)
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
