package durable_test

import (
	"context"
	"testing"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/history"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// BenchmarkListInbox times the console's inbox listings on day 400:
// 100,000 finished runbooks of 3 steps (durable/history), 5,000 parked
// ones, 50 at a gate and 50 failed with a retry to offer. The filters by
// need and state read the steps of the running runbooks they pass, since
// no index covers a step's status (docs/daemon.md, "List").
//
//	go test ./durable -run '^$' -bench ListInbox -benchtime 20x
func BenchmarkListInbox(b *testing.B) {
	ctx := context.Background()
	store := pgtest.Store(b)
	if _, err := history.Fill(ctx, pgtest.Conn(b, store), history.Shape{Runbooks: 100_000, Steps: 3}); err != nil {
		b.Fatal(err)
	}
	if err := store.InTestTx(ctx, func(tx *durable.Tx) error {
		return execAll(ctx, tx,
			`INSERT INTO runbooks (id, plan, plan_hash, request_key, status)
			 SELECT gen_random_uuid(), '{}', 'h', 'running-' || g, CASE WHEN g <= 5050 THEN 'executing' ELSE 'failed' END
			 FROM generate_series(1, 5100) g`,
			`INSERT INTO runbook_steps (runbook_id, key, position, verb, args, execution, status, attempt, error_code)
			 SELECT r.id, 's' || g, g, 'v', '{}', '{}',
			        CASE WHEN g = 1 THEN 'complete'
			             WHEN r.status = 'failed' THEN 'failed'
			             WHEN split_part(r.request_key, '-', 2)::int <= 50 THEN 'waiting_approval'
			             ELSE 'parked' END,
			        1, CASE WHEN r.status = 'failed' AND g = 2 THEN 'DEPENDENCY_UNAVAILABLE' END
			 FROM runbooks r, generate_series(1, 2) g WHERE r.request_key LIKE 'running-%'`,
			`INSERT INTO invocation_records (invocation_id, step_id, runbook_id, attempt, correlation_key, status, timeout_at)
			 SELECT gen_random_uuid(), id, runbook_id, 1, 'ck-running-' || id, 'active', now() + interval '1 day'
			 FROM runbook_steps WHERE status = 'parked'`,
			`ANALYZE`)
	}); err != nil {
		b.Fatal(err)
	}
	yes, no := true, false
	for _, bc := range []struct {
		name string
		q    driver.RunbookQuery
		want int
	}{
		{"newest", driver.RunbookQuery{Limit: 50}, 50},
		{"needs a person", driver.RunbookQuery{Limit: 100, NeedsPerson: &yes}, 100},
		{"the rest", driver.RunbookQuery{Limit: 50, NeedsPerson: &no}, 50},
		{"parked", driver.RunbookQuery{Limit: 50, State: string(rbtype.StateParked)}, 50},
		{"awaiting approval", driver.RunbookQuery{Limit: 50, State: string(rbtype.StateAwaitingApproval)}, 50},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.q.NoRetryCodes = []rbtype.ErrorCode{rbtype.CodeSchemaValidationFailed}
			for b.Loop() {
				page, err := store.ListRunbooks(ctx, bc.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Runbooks) != bc.want {
					b.Fatalf("%d runbooks, want %d", len(page.Runbooks), bc.want)
				}
			}
		})
	}
}
