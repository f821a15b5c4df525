package history_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable/history"
	"github.com/runbookdev/runbook/durable/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Fill makes the rows it promises: finished runbooks with their steps,
// edges, one completed wait each with its processed notification, a
// receipt and a ledger row per step, and their events.
func TestFillMakesFinishedRunbooksWithAllTheirRows(t *testing.T) {
	store := pgtest.Store(t)
	conn := pgtest.Conn(t, store)
	took, err := history.Fill(context.Background(), conn, history.Shape{Runbooks: 2000, Steps: 4})
	require.NoError(t, err)
	t.Logf("2,000 runbooks of 4 steps in %s", took)
	count := func(sql string) int {
		var n int
		require.NoError(t, conn.QueryRow(context.Background(), sql).Scan(&n))
		return n
	}
	require.Equal(t, 2000, count(`SELECT count(*) FROM runbooks r WHERE status = 'complete' AND finished_at IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM runbook_wakeups w WHERE w.runbook_id = r.id)`))
	require.Equal(t, 8000, count(`SELECT count(*) FROM runbook_steps WHERE status = 'complete'`))
	require.Equal(t, 6000, count(`SELECT count(*) FROM runbook_edges`))
	require.Equal(t, 2000, count(`SELECT count(*) FROM invocation_records WHERE status = 'completed'`))
	require.Equal(t, 2000, count(`SELECT count(*) FROM completion_notifications WHERE status = 'processed'`))
	require.Equal(t, 8000, count(`SELECT count(*) FROM action_receipts`))
	require.Equal(t, 8000, count(`SELECT count(*) FROM step_attempts`))
	require.Equal(t, 2000*2+8000*2, count(`SELECT sum(n) FROM runbook_event_rows`))
	// A row for the submission, one a step, one for the completion.
	require.Equal(t, 2000*2+8000, count(`SELECT count(*) FROM runbook_event_rows`))
	require.Zero(t, count(`SELECT count(*) FROM runbook_events`))
	require.Equal(t, 200, count(`SELECT count(*) FROM runbook_mutations`))
}
