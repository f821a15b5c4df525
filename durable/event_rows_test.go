package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// TestEventRowsMigrationKeepsEveryEvent stores events as rows of
// runbook_events, as rbd did before the migration event_rows, then
// migrates: every event reads back with its id, type, step, attempt,
// worker, data, time and place in its runbook's ledger; paging after an
// event id returns the same events as before; events appended since
// follow with larger ids, a runbook's events of one statement in one
// row.
func TestEventRowsMigrationKeepsEveryEvent(t *testing.T) {
	ctx := context.Background()
	store := pgtest.StoreAt(t, pgtest.MigrationVersion(t, "event_rows")-1)
	a, b := uuid.New(), uuid.New()
	insert := `INSERT INTO runbook_events (runbook_id, type, step_key, attempt, worker_id, data, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456000, time.UTC)
	pgtest.ExecIn(t, store, insert, a, "RUNBOOK_SUBMITTED", nil, nil, "w1", `{"inputs":{"n":1}}`, at)
	pgtest.ExecIn(t, store, insert, b, "RUNBOOK_SUBMITTED", nil, nil, nil, nil, at)
	pgtest.ExecIn(t, store, insert, a, "STEP_STARTED", "s1", 1, "w1", nil, at.Add(time.Millisecond))
	pgtest.ExecIn(t, store, insert, a, "STEP_SUCCEEDED", "s1", 1, "w1", `{"result":{"v":[1,null,"x"]},"n":null}`, at.Add(2*time.Millisecond))
	pgtest.ExecIn(t, store, insert, b, "RUNBOOK_COMPLETED", nil, nil, nil, `null`, at.Add(3*time.Millisecond))
	pgtest.ExecIn(t, store, insert, a, "RUNBOOK_COMPLETED", nil, nil, "w1", nil, at.Add(4*time.Millisecond))
	conn := pgtest.Conn(t, store)
	oldEvents := func(runbook uuid.UUID) []driver.Event {
		rows, err := conn.Query(ctx, `SELECT id, runbook_id, type, coalesce(step_key, ''), coalesce(attempt, 0),
			coalesce(worker_id, ''), data, at, row_number() OVER (ORDER BY id)
			FROM runbook_events WHERE runbook_id = $1 ORDER BY id`, runbook)
		require.NoError(t, err)
		defer rows.Close()
		var out []driver.Event
		for rows.Next() {
			var e driver.Event
			require.NoError(t, rows.Scan(&e.ID, &e.RunbookID, &e.Type, &e.StepKey, &e.Attempt, &e.WorkerID, &e.Data, &e.At, &e.Seq))
			out = append(out, e)
		}
		require.NoError(t, rows.Err())
		return out
	}
	before, beforeB := oldEvents(a), oldEvents(b)
	require.Len(t, before, 4)

	_, err := store.Migrate(ctx)
	require.NoError(t, err)
	after, err := store.Events(ctx, a, 0, 0)
	require.NoError(t, err)
	requireSameEvents(t, before, after)
	afterB, err := store.Events(ctx, b, 0, 0)
	require.NoError(t, err)
	requireSameEvents(t, beforeB, afterB)
	for i, e := range after {
		require.Equal(t, int64(i+1), e.Seq)
	}
	page, err := store.Events(ctx, a, after[1].ID, 1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	requireSameEvents(t, after[2:3], page)
	require.Equal(t, int64(3), page[0].Seq, "the place in the ledger counts the events before the cursor")
	typed, err := store.EventsOfType(ctx, a, []rbtype.EventType{rbtype.EventStepSucceeded, rbtype.EventRunbookCompleted})
	require.NoError(t, err)
	require.Len(t, typed, 2)
	require.Equal(t, after[2].ID, typed[0].ID)
	require.Equal(t, after[3].ID, typed[1].ID)

	// New events, two of one statement, follow the converted ones.
	tx, err := store.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.WriteAdvance(ctx, driver.AdvanceWrite{Events: []driver.Event{
		{RunbookID: a, Type: rbtype.EventStepStarted, StepKey: "s2", Attempt: 1, WorkerID: "w2"},
		{RunbookID: b, Type: rbtype.EventStepStarted, StepKey: "t1", Attempt: 2},
		{RunbookID: a, Type: rbtype.EventStepSucceeded, StepKey: "s2", Attempt: 1, WorkerID: "w2", Data: json.RawMessage(`{"result":{}}`)},
	}})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	more, err := store.Events(ctx, a, after[3].ID, 0)
	require.NoError(t, err)
	require.Len(t, more, 2)
	require.Greater(t, more[0].ID, afterB[len(afterB)-1].ID)
	require.Greater(t, more[1].ID, more[0].ID)
	require.Equal(t, []int64{5, 6}, []int64{more[0].Seq, more[1].Seq})
	require.Equal(t, rbtype.EventStepSucceeded, more[1].Type)
	require.JSONEq(t, `{"result":{}}`, string(more[1].Data))
	require.True(t, more[1].At.Equal(more[0].At), "the events of one statement share its row's clock")
	require.True(t, more[0].At.After(after[3].At))
	var rows, inB int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), sum(n) FILTER (WHERE runbook_id = $1) FROM runbook_event_rows`, b).Scan(&rows, &inB))
	require.Equal(t, 6+2, rows, "a row for each converted event, and one for each runbook's new ones")
	require.Equal(t, 3, inB)
	var old int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM runbook_events`).Scan(&old))
	require.Zero(t, old)
}

func requireSameEvents(t *testing.T, want, got []driver.Event) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.ID, g.ID)
		require.Equal(t, w.RunbookID, g.RunbookID)
		require.Equal(t, w.Type, g.Type)
		require.Equal(t, w.StepKey, g.StepKey)
		require.Equal(t, w.Attempt, g.Attempt)
		require.Equal(t, w.WorkerID, g.WorkerID)
		require.True(t, w.At.Equal(g.At), "%s: at %s, want %s", w.Type, g.At, w.At)
		require.Equal(t, w.Seq, g.Seq)
		if w.Data == nil {
			require.Nil(t, g.Data, "%s", w.Type)
		} else {
			require.JSONEq(t, string(w.Data), string(g.Data))
		}
	}
}

// The ledger refuses an event of a type rbtype.EventTypes does not list,
// as runbook_events' check constraint did, and writes nothing of the
// statement.
func TestTheLedgerRefusesAnUnknownEventType(t *testing.T) {
	ctx := context.Background()
	store := pgtest.Store(t)
	id := uuid.New()
	err := store.InTx(ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(ctx, driver.AdvanceWrite{Events: []driver.Event{
			{RunbookID: id, Type: rbtype.EventStepStarted, StepKey: "s1", Attempt: 1},
			{RunbookID: id, Type: "STEP_EXPLODED", StepKey: "s1", Attempt: 1},
		}})
		return err
	})
	require.ErrorContains(t, err, `"STEP_EXPLODED"`)
	events, err := store.Events(ctx, id, 0, 0)
	require.NoError(t, err)
	require.Empty(t, events)
}

// Events whose step keys and worker ids hold quotes, backslashes, control
// characters and non-ASCII text, and data that is JSON null, read back as
// written; more than a row's 1,024 events of one runbook take several
// rows, numbered on.
func TestEventRowsKeepEveryField(t *testing.T) {
	ctx := context.Background()
	store := pgtest.Store(t)
	id := uuid.New()
	written := []driver.Event{
		{RunbookID: id, Type: rbtype.EventStepStarted, StepKey: `a"b\c` + "\t\x01é[0]", Attempt: 3, WorkerID: "wörker \"1\""},
		{RunbookID: id, Type: rbtype.EventStepSucceeded, StepKey: "s", Attempt: 1, Data: json.RawMessage(`null`)},
		{RunbookID: id, Type: rbtype.EventRunbookCompleted, Data: json.RawMessage(` {"a": [1, 2.50, "x"]} `)},
	}
	for i := range 1100 {
		written = append(written, driver.Event{RunbookID: id, Type: rbtype.EventStepHeartbeat, StepKey: fmt.Sprint("h", i), Attempt: 1})
	}
	require.NoError(t, store.InTx(ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(ctx, driver.AdvanceWrite{Events: written})
		return err
	}))
	got, err := store.Events(ctx, id, 0, 2000)
	require.NoError(t, err)
	require.Len(t, got, len(written))
	for i, w := range written {
		g := got[i]
		require.Equal(t, w.Type, g.Type, "%d", i)
		require.Equal(t, w.StepKey, g.StepKey, "%d", i)
		require.Equal(t, w.Attempt, g.Attempt, "%d", i)
		require.Equal(t, w.WorkerID, g.WorkerID, "%d", i)
		require.Equal(t, int64(i+1), g.Seq)
		if i > 0 {
			require.Greater(t, g.ID, got[i-1].ID)
		}
		if w.Data == nil {
			require.Nil(t, g.Data, "%d", i)
		} else {
			require.JSONEq(t, string(w.Data), string(g.Data), "%d", i)
		}
	}
	// Paging from inside the second row counts the events before it.
	page, err := store.Events(ctx, id, got[1050].ID, 5)
	require.NoError(t, err)
	require.Len(t, page, 5)
	require.Equal(t, got[1051].ID, page[0].ID)
	require.Equal(t, int64(1052), page[0].Seq)
	conn := pgtest.Conn(t, store)
	var rows int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM runbook_event_rows WHERE runbook_id = $1`, id).Scan(&rows))
	require.Equal(t, 2, rows)
}
