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
			`INSERT INTO runbook_edge_rows (runbook_id, to_key, from_key, kind)
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

// TestStatementsOfBudgetsTrustAndTheLedgerKeepToTheirIndexes holds the
// statements added since TestHotQueriesUseTheirIndexes was written to
// their indexes under the generic plan PostgreSQL settles on for a
// prepared statement after five runs (pgx prepares every statement): the
// capped tenants' locks (runbooks by primary key, tenant_budgets by
// tenant), earned trust's upsert and reset (verb_trust by primary key),
// and the job ledger read through step_attempts, its stored rows and the
// rows kept in completed steps (migration 027), by runbook and by attempt;
// the count of attempts that reserved nothing (migration 028), read with
// the budgets, moved by runbook and woken by tenant.
func TestStatementsOfBudgetsTrustAndTheLedgerKeepToTheirIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("fills tables with 30k runbooks")
	}
	b := setup(t)
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return execAll(b.ctx, tx,
			`INSERT INTO runbooks (id, plan, plan_hash, request_key, tenant)
			 SELECT gen_random_uuid(), '{}', 'h', 'r' || g, 't' || (g % 3000) FROM generate_series(1, 30000) g`,
			`INSERT INTO tenant_budgets (tenant, scope, cost_usd, updated_by)
			 SELECT 't' || g, s, 10, 'test' FROM generate_series(0, 2999) g, unnest(ARRAY['runbook', 'day', 'month']) s`,
			`INSERT INTO verb_trust (tenant, verb, approvals)
			 SELECT 't' || g, 'd.verb' || v, v FROM generate_series(0, 2999) g, generate_series(1, 10) v`,
			`INSERT INTO runbook_steps (runbook_id, key, position, verb, args, execution, status, attempt, started_at, finished_at,
			        ledger_attempt_id, ledger_worker)
			 SELECT r.id, 's' || g, g, 'v', '{}', '{}', 'complete', 1, now(), now(),
			        CASE WHEN g = 1 THEN gen_random_uuid() END, CASE WHEN g = 1 THEN 'w' END
			 FROM runbooks r, generate_series(1, 2) g`,
			`INSERT INTO step_attempt_rows (attempt_id, runbook_id, tenant, step_key, verb, attempt, finished_at, outcome)
			 SELECT gen_random_uuid(), runbook_id, 't', key, verb, 1, now(), 'failed' FROM runbook_steps WHERE position = 2`,
			`INSERT INTO tenant_unreserved_attempts (runbook_id, tenant, running, waiting)
			 SELECT id, tenant, 1, false FROM runbooks WHERE request_key LIKE 'r1%'`,
			`INSERT INTO runbook_wakeups (runbook_id, wake_at) SELECT id, now() + interval '1 hour' FROM runbooks`,
			`INSERT INTO tenant_spend (tenant, day, cost_usd) SELECT 't' || g, current_date - d, 1 FROM generate_series(0, 2999) g, generate_series(0, 29) d`,
			`ANALYZE`)
	}))
	var ids []uuid.UUID
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) (err error) {
		ids, err = tx.RunbookIDsForTest(b.ctx, 3)
		return err
	}))
	outcomes := []driver.Outcome{{ID: uuid.New(), Tenant: "t1", RunbookID: ids[0], LineageRoot: ids[0], Generation: 1,
		StepKey: "s1", Attempt: 1, Verb: "v", Type: "t", Status: "produced", ResultHash: "h"}}

	tests := []struct {
		name    string
		sql     string
		args    []any
		indexes []string
		tables  []string
	}{
		{"capped tenants' locks", durable.LockCappedTenantsSQL, []any{ids, false},
			[]string{"runbooks_pkey", "tenant_budgets_pkey"}, []string{"runbooks", "tenant_budgets"}},
		{"trust earned", durable.ApproveTrustSQL, []any{"t1", "d.verb1", ids[0], "s1", "w", 3, "approved"},
			[]string{"verb_trust_pkey"}, []string{"verb_trust"}},
		{"trust lost", durable.ResetTrustSQL, []any{"t1", "d.verb1", ids[0], "s1", "w", 3, "failed"},
			[]string{"verb_trust_pkey"}, []string{"verb_trust"}},
		{"a runbook's cost", durable.RunbookCostSQL, []any{ids[0]},
			[]string{"step_attempt_rows_pkey", "runbook_steps_runbook_id_", "runbooks_pkey"}, []string{"step_attempt_rows", "runbook_steps", "runbooks"}},
		{"an outcome's arguments' hash", durable.WriteOutcomesSQL, durable.OutcomeArgsForTest(outcomes),
			[]string{"step_attempt_rows_pkey", "runbook_steps_runbook_id_"}, []string{"step_attempt_rows", "runbook_steps", "runbooks"}},
		{"budgets, spend and attempts that reserved nothing", durable.TenantBudgetsSQL, []any{ids, time.Now(), true},
			[]string{"runbooks_pkey", "tenant_unreserved_attempts_tenant"}, []string{"runbooks", "tenant_budgets", "tenant_unreserved_attempts", "tenant_spend"}},
		{"attempts that reserved nothing, counted", durable.CountUnreservedSQL, []any{ids, []int32{1, -1, 0}, []bool{false, false, true}, []string{"t1", "t2", "t3"}},
			[]string{"tenant_unreserved_attempts_pkey"}, []string{"tenant_unreserved_attempts"}},
		{"their waiters woken", durable.WakeWaitersSQL, []any{[]string{"t1"}},
			[]string{"tenant_unreserved_attempts_tenant", "runbook_wakeups_pkey"}, []string{"tenant_unreserved_attempts", "runbook_wakeups"}},
		{"idle counts dropped", durable.DropIdleUnreserved, []any{ids, []string{"t1"}},
			[]string{"tenant_unreserved_attempts"}, []string{"tenant_unreserved_attempts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := b.store.ExplainGeneric(b.ctx, tt.sql, tt.args)
			require.NoError(t, err)
			t.Logf("%s:\n%s", tt.name, plan)
			for _, index := range tt.indexes {
				require.Contains(t, plan, index, "the statement must use its index")
			}
			for _, table := range tt.tables {
				require.NotRegexp(t, `Seq Scan on `+table+`\b`, plan, "and must not read the whole table")
			}
		})
	}
}
