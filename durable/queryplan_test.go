package durable_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
)

// TestHotQueriesUseTheirIndexes fills the tables with 30k runbooks, 60k
// steps, and as many invocations and notifications, nearly all finished,
// and a few leases, then checks that the queries workers run all the time find
// their few rows through an index rather than by reading the table.
func TestHotQueriesUseTheirIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("fills tables with 30k runbooks")
	}
	b := setup(t)
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return execAll(b.ctx, tx,
			`INSERT INTO runbooks (id, plan, plan_hash, request_key)
			 SELECT gen_random_uuid(), '{}', 'h', 'r' || g FROM generate_series(1, 30000) g`,
			`INSERT INTO runbook_wakeups (runbook_id, wake_at)
			 SELECT id, CASE WHEN request_key LIKE '%00' THEN now() ELSE now() + interval '1 hour' END FROM runbooks`,
			`INSERT INTO runbook_steps (runbook_id, key, position, verb, args, execution, status, next_attempt_at)
			 SELECT r.id, 's' || g, g, 'v', '{}', '{}',
			        CASE WHEN g = 2 AND r.request_key LIKE '%7' THEN 'failed_retryable' WHEN g = 2 THEN 'pending' ELSE 'complete' END,
			        CASE WHEN g = 2 AND r.request_key LIKE '%7' THEN now() + interval '1 hour' END
			 FROM runbooks r, generate_series(1, 2) g`,
			`INSERT INTO runbook_edges (runbook_id, to_key, from_key, kind)
			 SELECT runbook_id, key, 's' || (position - 1), 'data' FROM runbook_steps WHERE position > 1`,
			`INSERT INTO invocation_records (invocation_id, step_id, runbook_id, attempt, correlation_key, status, timeout_at)
			 SELECT gen_random_uuid(), id, runbook_id, 1, 'ck' || id,
			        CASE WHEN id % 1000 = 0 THEN 'active' ELSE 'completed' END, now() + interval '1 day'
			 FROM runbook_steps`,
			`INSERT INTO completion_notifications (correlation_key, payload_hash, outcome, status)
			 SELECT 'ck' || id, 'h', 'completed', CASE WHEN id % 1000 = 0 THEN 'received' ELSE 'processed' END
			 FROM runbook_steps`,
			`UPDATE runbook_steps SET lease_worker = 'w', lease_attempt = 1, lease_acquired_at = now(), lease_expires_at = now()
			 WHERE id % 1000 = 0`,
			`ANALYZE`)
	}))

	someRunbooks := make([]uuid.UUID, 0, 3)
	page, err := b.store.ListRunbooks(b.ctx, driver.RunbookQuery{Limit: 3})
	require.NoError(t, err)
	for _, r := range page.Runbooks {
		someRunbooks = append(someRunbooks, r.ID)
	}

	tests := []struct {
		name  string
		sql   string
		args  []any
		index string
		table string
	}{
		{"live steps of an advance", durable.LiveStepsSQL, []any{someRunbooks}, "runbook_steps_runbook_id_", "runbook_steps"},
		{"claim due runbooks", durable.ClaimDueQuery, []any{10, time.Minute}, "runbook_wakeups_due", "runbook_wakeups"},
		{"inbox sweep", durable.SweepInboxQuery, []any{100}, "completion_notifications_unprocessed", "completion_notifications"},
		{"timeout sweep", durable.SweepTimeoutsQuery, []any{100}, "invocation_records_timeout", "invocation_records"},
		{"retry sweep", durable.SweepRetriesQuery, []any{100}, "runbook_steps_retry_due", "runbook_steps"},
		{"orphan notifications", durable.PruneOrphansQuery, []any{time.Now(), 100}, "completion_notifications_unprocessed", "completion_notifications"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var plan string
			require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
				var err error
				plan, err = tx.Explain(b.ctx, tt.sql, tt.args...)
				return err
			}))
			t.Logf("%s:\n%s", tt.name, plan)
			require.Contains(t, plan, tt.index, "the query must use its index")
			require.NotContains(t, plan, "Seq Scan on "+tt.table+" ", "and must not read the whole table")
			require.False(t, strings.HasSuffix(strings.TrimSpace(plan), "Seq Scan on "+tt.table))
		})
	}
}

// TestTheAdvanceLoadKeepsToItsIndexWhenStatisticsAreStale reproduces what
// make bench met with three workers: a steps table analyzed while it held
// a few hundred runbooks, then filled with thousands more before
// autovacuum looked again. PostgreSQL then took a runbook id to stand for
// hundreds of steps and loaded an advance's 64 runbooks by reading the
// whole table, in parallel: 53 % of the statements' time, 325 ms a load.
// The load must find its steps through the index whatever the statistics
// say, in a custom plan and in a generic one.
func TestTheAdvanceLoadKeepsToItsIndexWhenStatisticsAreStale(t *testing.T) {
	if testing.Short() {
		t.Skip("fills tables with 60k rows")
	}
	addRunbooks := func(n int) string {
		return fmt.Sprintf(`WITH r AS (
			INSERT INTO runbooks (id, plan, plan_hash, request_key)
			SELECT gen_random_uuid(), '{}', 'h', gen_random_uuid()::text FROM generate_series(1, %d)
			RETURNING id)
		INSERT INTO runbook_steps (runbook_id, key, position, verb, args, execution)
		SELECT r.id, 's' || g, g, 'v', '{"pad": "`+strings.Repeat("x", 200)+`"}', '{}'
		FROM r, generate_series(1, 20) g`, n)
	}
	// A custom plan, as for a statement's first runs, and the generic
	// plan PostgreSQL may settle on after five (pgx prepares statements).
	for _, generic := range []bool{false, true} {
		t.Run(fmt.Sprintf("generic=%v", generic), func(t *testing.T) {
			b := setup(t)
			var (
				ids  []uuid.UUID
				plan string
			)
			require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
				err := execAll(b.ctx, tx, addRunbooks(200), `ANALYZE runbook_steps`, addRunbooks(3000),
					`SET LOCAL max_parallel_workers_per_gather = 2`)
				if err != nil {
					return err
				}
				if ids, err = tx.RunbookIDsForTest(b.ctx, 64); err != nil {
					return err
				}
				if !generic {
					plan, err = tx.Explain(b.ctx, durable.LiveStepsSQL, ids)
					return err
				}
				literal := make([]string, len(ids))
				for i, id := range ids {
					literal[i] = id.String()
				}
				err = execAll(b.ctx, tx, `PREPARE live_steps(uuid[]) AS `+durable.LiveStepsSQL,
					`SET LOCAL plan_cache_mode = force_generic_plan`)
				if err != nil {
					return err
				}
				plan, err = tx.Explain(b.ctx, `EXECUTE live_steps('{`+strings.Join(literal, ",")+`}')`)
				return err
			}))
			t.Logf("%s", plan)
			require.Len(t, ids, 64)
			require.Contains(t, plan, "runbook_steps_runbook_id_", "the load must use its index")
			require.NotContains(t, plan, "Seq Scan on runbook_steps", "and must not read the whole table")
			require.NotContains(t, plan, "Gather", "nor start parallel workers for a few hundred rows")
		})
	}
}

// execAll runs statements in order in tx, stopping at the first error.
func execAll(ctx context.Context, tx *durable.Tx, sqls ...string) error {
	for _, sql := range sqls {
		if err := tx.ExecForTest(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}
