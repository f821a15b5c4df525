// Package history fills a schema with the rows of finished runbooks, fast,
// in SQL: what a deployment keeps after months of work. The query-plan
// tests and `make bench` use it to measure the hot path on day 400, not
// only on day 1 (docs/scaling.md, "History").
//
// The rows are shaped as the daemon writes them: each runbook finished
// `complete`, a chain of steps each with its edge, its ledger row, its
// STEP_STARTED and STEP_SUCCEEDED events and a receipt; one step in each
// runbook parked, with its invocation completed and its notification
// processed; one runbook in ten retried once (a mutation). Their times lie
// in the past, spread over Age.
package history

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Shape says how much history to make.
type Shape struct {
	// Runbooks is how many finished runbooks; Steps each (at least 1).
	Runbooks, Steps int
	// Age spreads their finishing times over the past (30 days when zero).
	Age time.Duration
	// Tenant owns them ("default" when empty).
	Tenant string
}

// Fill adds the history to the schema conn's search_path names, in one
// transaction, then analyzes the tables. It returns how long it took.
func Fill(ctx context.Context, conn *pgx.Conn, s Shape) (time.Duration, error) {
	began := time.Now()
	if s.Steps < 1 {
		s.Steps = 1
	}
	if s.Age <= 0 {
		s.Age = 30 * 24 * time.Hour
	}
	if s.Tenant == "" {
		s.Tenant = "default"
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Foreign keys hold by construction here, and checking them row by
	// row was most of the time: a superuser (the tests' and the bench's
	// own servers) skips their triggers for this transaction.
	if _, err := tx.Exec(ctx, "SAVEPOINT replica"); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT replica"); err != nil {
			return 0, err
		}
	}
	for _, q := range statements(s) {
		if _, err := tx.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("history: %w\n%s", err, q)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	// The tables filled, in the schema the search_path names: not every
	// schema of the database.
	if _, err := conn.Exec(ctx, "ANALYZE runbooks, runbook_steps, runbook_edge_rows, invocation_records, "+
		"completion_notifications, action_receipts, step_attempt_rows, runbook_mutations, runbook_event_rows"); err != nil {
		return 0, err
	}
	return time.Since(began), nil
}

// statements are Fill's SQL. A temporary table numbers the runbooks, so
// that every later statement derives its rows from it by position.
func statements(s Shape) []string {
	age := fmt.Sprintf("%d seconds", int64(s.Age.Seconds()))
	n, k := s.Runbooks, s.Steps
	parked := (k + 1) / 2 // the step of each runbook that parked
	return []string{
		`CREATE TEMP TABLE history_runbooks ON COMMIT DROP AS
		 SELECT g AS n, gen_random_uuid() AS id,
		        now() - interval '` + age + `' * (g::float8 / ` + fmt.Sprint(n) + `) AS finished
		 FROM generate_series(1, ` + fmt.Sprint(n) + `) g`,
		`INSERT INTO runbooks (id, plan, plan_hash, inputs, status, mode, request_key, tenant, actor,
		        created_at, updated_at, finished_at, correlation_id, trace_id)
		 SELECT id, '{"schema_version":"1","steps":[],"edges":` + chainEdges(k) + `}', 'history', '{"who":"history"}', 'complete', 'execute',
		        'history:' || id, '` + s.Tenant + `', 'history', finished - interval '1 minute', finished, finished,
		        id::text, replace(id::text, '-', '')
		 FROM history_runbooks`,
		`INSERT INTO runbook_steps (runbook_id, key, position, verb, args, execution, status, attempt,
		        idempotency_key, resolved_args, result, completion_seq, created_at, updated_at, started_at, finished_at)
		 SELECT r.id, 's' || g, g, 'history.step', '{"v":{"$input":"who"}}',
		        '{"kind":"sync","handler":"core.echo","side_effects":"external_call"}', 'complete', 1,
		        'history:' || r.id || ':s' || g, '{"v":"history"}', '{"v":"history"}', nextval('runbook_steps_completion_seq'),
		        r.finished - interval '1 minute', r.finished, r.finished - interval '1 minute', r.finished
		 FROM history_runbooks r, generate_series(1, ` + fmt.Sprint(k) + `) g`,
		`INSERT INTO invocation_records (invocation_id, step_id, runbook_id, attempt, correlation_key, status,
		        parked_at, timeout_at, finished_at)
		 SELECT gen_random_uuid(), st.id, st.runbook_id, 1, 'history:' || st.id, 'completed',
		        st.started_at, st.started_at + interval '1 day', st.finished_at
		 FROM runbook_steps st JOIN history_runbooks r ON r.id = st.runbook_id
		 WHERE st.position = ` + fmt.Sprint(parked),
		`INSERT INTO completion_notifications (correlation_key, payload_hash, outcome, result, status, received_at,
		        processed_at, tenant)
		 SELECT correlation_key, 'history', 'completed', '{"v":"history"}', 'processed', finished_at, finished_at,
		        '` + s.Tenant + `'
		 FROM invocation_records i JOIN history_runbooks r ON r.id = i.runbook_id`,
		`INSERT INTO action_receipts (handler, idempotency_key, runbook_id, step_key, result, result_hash, created_at)
		 SELECT 'core.echo', st.idempotency_key, st.runbook_id, st.key, st.result, 'history', st.finished_at
		 FROM runbook_steps st JOIN history_runbooks r ON r.id = st.runbook_id`,
		`INSERT INTO step_attempt_rows (attempt_id, runbook_id, tenant, actor, step_key, verb, attempt, worker_id,
		        started_at, finished_at, outcome, correlation_id, trace_id)
		 SELECT gen_random_uuid(), st.runbook_id, '` + s.Tenant + `', 'history', st.key, st.verb, 1, 'history',
		        st.started_at, st.finished_at, 'succeeded', st.runbook_id::text, replace(st.runbook_id::text, '-', '')
		 FROM runbook_steps st JOIN history_runbooks r ON r.id = st.runbook_id`,
		`INSERT INTO runbook_mutations (runbook_id, actor, kind, payload, at)
		 SELECT id, 'history', 'retry', '{"steps":["s1"]}', finished - interval '30 seconds'
		 FROM history_runbooks WHERE n % 10 = 0`,
		// The events as an advance writes them (docs/design/runtime.md, "The
		// event ledger"): a row for the submission, one for each step's
		// start and end, one for the runbook's completion.
		`INSERT INTO runbook_event_rows (runbook_id, first_id, last_id, n, at, events)
		 SELECT runbook_id, id, id + n - 1, n, at, events
		 FROM (SELECT u.*, nextval('runbook_event_ids') * 1024 AS id FROM (
		        SELECT r.id AS runbook_id, 0 AS grp, 1 AS n, r.finished AS at,
		               jsonb_build_array(jsonb_build_array('RUNBOOK_SUBMITTED', NULL, NULL, 'history')) AS events
		        FROM history_runbooks r
		        UNION ALL
		        SELECT st.runbook_id, st.position + 1, 2, st.finished_at,
		               jsonb_build_array(jsonb_build_array('STEP_STARTED', st.key, 1, 'history'),
		                                 jsonb_build_array('STEP_SUCCEEDED', st.key, 1, 'history'))
		        FROM runbook_steps st JOIN history_runbooks r ON r.id = st.runbook_id
		        UNION ALL
		        SELECT r.id, 2147483647, 1, r.finished,
		               jsonb_build_array(jsonb_build_array('RUNBOOK_COMPLETED', NULL, NULL, 'history'))
		        FROM history_runbooks r) u
		       ORDER BY u.runbook_id, u.grp) e`,
	}
}

// chainEdges are the edges of a chain of k steps, s1 to sk, as a plan
// holds them (its "edges"; runbook_edges shows them, migration 027).
func chainEdges(k int) string {
	var b strings.Builder
	b.WriteString("[")
	for g := 2; g <= k; g++ {
		if g > 2 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"from":"s%d","to":"s%d","kind":"data"}`, g-1, g)
	}
	b.WriteString("]")
	return b.String()
}
