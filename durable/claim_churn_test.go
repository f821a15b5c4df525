package durable_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/history"
	"github.com/runbookdev/runbook/durable/pgtest"
)

// buffersOf runs EXPLAIN (ANALYZE, BUFFERS) of a statement and returns the
// shared buffers its plan touched: a count of pages read, which, unlike a
// time, does not change with what else the machine is doing. The
// statement's writes, if any, commit.
func buffersOf(t *testing.T, b *testBundle, sql string) int {
	t.Helper()
	var plan string
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		var err error
		plan, err = tx.Explain(b.ctx, "(ANALYZE, BUFFERS) "+sql)
		return err
	}))
	m := regexp.MustCompile(`Buffers: shared hit=(\d+)(?: read=(\d+))?`).FindStringSubmatch(plan)
	if m == nil {
		return 0 // no buffer touched at all
	}
	hit, _ := strconv.Atoi(m[1])
	read, _ := strconv.Atoi(m[2])
	return hit + read
}

// TestTheClaimAfterChurn measures what the claim reads when nothing is
// due, in pages, beside 20,000 finished runbooks of history and 5,000
// parked ones: fresh, after 10,000 wake-ups claimed and parked again
// (each moves a wake-up and leaves a dead index entry until a VACUUM),
// and after a VACUUM of the wake-ups. Wake-ups are a table of their own
// (migration 013) with autovacuum thresholds that do not grow with the
// history; the runbooks table's would (a fifth of its rows). The figures
// are in docs/scaling.md ("The claim under churn").
func TestTheClaimAfterChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("churns 5,000 runbooks beside 20,000 of history")
	}
	b := setupAlone(t)
	_, err := history.Fill(b.ctx, pgtest.Conn(t, b.store), history.Shape{Runbooks: 20000, Steps: 1})
	require.NoError(t, err)
	exec := func(sql string) {
		require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error { return tx.ExecForTest(b.ctx, sql) }))
	}
	exec(`INSERT INTO runbooks (id, plan, plan_hash, request_key) SELECT gen_random_uuid(), '{}', 'h', 'churn' || g
		FROM generate_series(1, 5000) g`)
	exec(`INSERT INTO runbook_wakeups (runbook_id, wake_at)
		SELECT id, now() + interval '1 hour' + random() * interval '1 hour' FROM runbooks WHERE request_key LIKE 'churn%'`)
	pgtest.ExecIn(t, b.store, `VACUUM ANALYZE runbook_wakeups`)
	const nothingDue = `SELECT runbook_id FROM runbook_wakeups WHERE wake_at <= now() ORDER BY wake_at LIMIT 256 FOR UPDATE SKIP LOCKED`
	fresh := buffersOf(t, b, nothingDue)

	for range 20 {
		// 500 runbooks become due (a notification, a retry), are claimed,
		// and park again, as a resume's advances leave them.
		exec(`UPDATE runbook_wakeups SET wake_at = now() - interval '1 second'
			WHERE runbook_id IN (SELECT runbook_id FROM runbook_wakeups ORDER BY random() LIMIT 500)`)
		for {
			ids, err := b.store.ClaimDue(context.Background(), 256, 30*time.Second)
			require.NoError(t, err)
			if len(ids) == 0 {
				break
			}
		}
		exec(`UPDATE runbook_wakeups SET wake_at = now() + interval '1 hour' WHERE wake_at < now() + interval '1 minute'`)
	}
	churned := buffersOf(t, b, nothingDue)
	pgtest.ExecIn(t, b.store, `VACUUM runbook_wakeups`)
	vacuumed := buffersOf(t, b, nothingDue)
	t.Logf("pages the claim reads with nothing due, 5,000 parked beside 20,000 finished: fresh %d, after 10,000 wake-ups %d, after VACUUM %d",
		fresh, churned, vacuumed)
	require.LessOrEqual(t, vacuumed, fresh+2, "vacuumed, the claim reads what it read fresh")

	var options []string
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		var err error
		options, err = tx.ReloptionsForTest(b.ctx, "runbook_wakeups")
		return err
	}))
	require.Contains(t, options, "autovacuum_vacuum_scale_factor=0", "autovacuum comes after a fixed count of dead wake-ups, whatever the history")
	require.Contains(t, options, "autovacuum_vacuum_threshold=500")
}
