package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The event ledger (docs/design/runtime.md, "The event ledger") keeps the
// events one statement appends for a runbook in one row of
// runbook_event_rows (migration 023): a row's events are numbered from its
// first_id, one apart, and stamped with its clock. Readers unnest the rows
// and see one event a row, as they did when each was a row of its own.

// maxEventsPerRow is how many events a row holds at most: first_id is
// nextval('runbook_event_ids') times this, so ids never collide.
const maxEventsPerRow = 1024

// appendEventsSQL adds rows of events to the ledger in one statement: for
// each, the runbook, how many events and their JSON (eventRows). Rows are
// numbered in the order given; each is stamped with the clock at
// insertion, not the transaction's start, so the ledger measures latencies
// truthfully.
const appendEventsSQL = `
	INSERT INTO runbook_event_rows (runbook_id, first_id, last_id, n, at, events)
	SELECT r, id, id + n - 1, n, clock_timestamp(), e::jsonb
	FROM (SELECT r, n, e, nextval('runbook_event_ids') * 1024 AS id
		FROM unnest($1::uuid[], $2::int[], $3::text[]) WITH ORDINALITY AS u(r, n, e, o)
		ORDER BY o) x`

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

// eventArgs lays events out as appendEventsSQL's rows: a runbook's events,
// in the order given, in rows of at most maxEventsPerRow, the runbooks in
// the order they first appear.
func eventArgs(events []driver.Event) []any {
	var runbooks [][16]byte
	var counts []int32
	var rows []string
	open := map[uuid.UUID]int{} // the row being filled, by runbook
	var bufs [][]byte
	for _, e := range events {
		i, ok := open[e.RunbookID]
		if !ok || counts[i] == maxEventsPerRow {
			i = len(rows)
			open[e.RunbookID] = i
			runbooks, counts, rows = append(runbooks, e.RunbookID), append(counts, 0), append(rows, "")
			bufs = append(bufs, []byte{'['})
		}
		if counts[i] > 0 {
			bufs[i] = append(bufs[i], ',')
		}
		bufs[i] = appendEvent(bufs[i], e)
		counts[i]++
	}
	for i, b := range bufs {
		rows[i] = string(append(b, ']'))
	}
	return []any{runbooks, counts, rows}
}

// appendEvent appends an event as its row's array holds it: [type,
// step_key, attempt, worker_id, data], null where runbook_events had
// NULL; without data when it had none, so that a JSON null stays one.
func appendEvent(b []byte, e driver.Event) []byte {
	b = append(b, '[')
	b = appendJSONString(b, string(e.Type))
	b = append(b, ',')
	if e.StepKey == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, e.StepKey)
	}
	b = append(b, ',')
	if e.Attempt > 0 {
		b = strconv.AppendInt(b, int64(int32(e.Attempt)), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, ',')
	if e.WorkerID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, e.WorkerID)
	}
	if len(e.Data) > 0 {
		b = append(b, ',')
		b = append(b, e.Data...)
	}
	return append(b, ']')
}

// appendJSONString appends s as a JSON string. Plain text is copied as it
// is; anything with a quote, a backslash, a control character or a
// non-ASCII byte goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// eventColumns are an event's columns, from x, an element of row b's
// events at ordinality k, in the order scanEvent reads them.
const eventColumns = `b.first_id + x.k - 1, b.runbook_id, x.e->>0, coalesce(x.e->>1, ''),
	coalesce((x.e->>2)::int, 0), coalesce(x.e->>3, ''), x.e->4, b.at`

// eventsAfterSQL reads a runbook's events after an event id, oldest
// first. The rows are found on (runbook_id, last_id) in order; within a
// row, the array's order is the events'. Seq, the event's place in its
// runbook's ledger, is the count of the events up to the one asked after
// (whole rows, and the first part of the row it falls in, which ends
// fewer than maxEventsPerRow ids after it) plus its place in the page.
const eventsAfterSQL = `
	SELECT ` + eventColumns + `,
		(SELECT coalesce(sum(least(c.n, $2 - c.first_id + 1)), 0) FROM runbook_event_rows c
			WHERE c.runbook_id = $1 AND c.last_id < $2 + 1024 AND c.first_id <= $2)
		+ row_number() OVER (ORDER BY b.last_id, x.k)
	FROM runbook_event_rows b, jsonb_array_elements(b.events) WITH ORDINALITY x(e, k)
	WHERE b.runbook_id = $1 AND b.last_id > $2 AND b.first_id + x.k - 1 > $2
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
