package durable

import (
	"context"

	"github.com/google/uuid"
	"github.com/runbookdev/runbook/driver"

	"github.com/jackc/pgx/v5"
)

// Test hooks: reach into the schema in ways the store never should.

// InTestTx runs fn in a transaction, as InTx does, handing it the
// concrete Tx so that a test can use the hooks below.
func (s *Store) InTestTx(ctx context.Context, fn func(*Tx) error) error {
	return s.InTx(ctx, func(tx driver.Tx) error { return fn(tx.(*Tx)) })
}

// SetSchemaVersionForTest pretends a newer rbd migrated the database.
func (t *Tx) SetSchemaVersionForTest(ctx context.Context, version int32) error {
	_, err := t.tx.Exec(ctx, "UPDATE schema_version SET version = $1", version)
	return translate(err)
}

// RunbookIDsForTest returns the ids of up to n runbooks, in no order.
func (t *Tx) RunbookIDsForTest(ctx context.Context, n int) ([]uuid.UUID, error) {
	rows, err := t.tx.Query(ctx, "SELECT id FROM runbooks LIMIT $1", n)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// DropSchemaForTest drops a schema.
func (t *Tx) DropSchemaForTest(ctx context.Context, schema string) error {
	_, err := t.tx.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return translate(err)
}

// ExecForTest runs a statement.
func (t *Tx) ExecForTest(ctx context.Context, sql string, args ...any) error {
	_, err := t.tx.Exec(ctx, sql, args...)
	return translate(err)
}

// Explain returns the plan of a query, as EXPLAIN's text.
func (t *Tx) Explain(ctx context.Context, sql string, args ...any) (string, error) {
	rows, err := t.tx.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		return "", translate(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out, translate(err)
}

// The sweep queries, for EXPLAIN.
const (
	SweepInboxQuery    = sweepInboxQuery
	PruneOrphansQuery  = pruneOrphansQuery
	SweepTimeoutsQuery = sweepTimeoutsQuery
	SweepRetriesQuery  = sweepRetriesQuery
	ClaimDueQuery      = claimDueQuery
)

// LiveStepsSQL is the query that loads an advance's steps.
var LiveStepsSQL = liveStepsSQL

// LockWaitersForTest counts the sessions waiting for an advisory lock.
// pg_locks shows a bigint key as its high half in classid and its low half
// in objid.
func (s *Store) LockWaitersForTest(ctx context.Context, key int64) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
		  AND classid::bigint = $1 AND objid::bigint = $2`,
		int64(uint64(key)>>32), int64(uint32(key))).Scan(&n)
	return n, translate(err)
}

// SettingForTest reads a setting on a connection of the pool.
func (s *Store) SettingForTest(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, translate(err)
}

// ReloptionsForTest reads a table's storage options (pg_class.reloptions).
func (t *Tx) ReloptionsForTest(ctx context.Context, table string) ([]string, error) {
	var opts []string
	err := t.tx.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`, table).Scan(&opts)
	return opts, translate(err)
}

// ListRunbooksQuery is a listing's statement and arguments, for EXPLAIN.
func ListRunbooksQuery(q driver.RunbookQuery) (string, []any, error) {
	sql, args, _, err := listRunbooksQuery(q)
	return sql, args, err
}

// Statements of the advance, the gates and the views, for EXPLAIN.
const (
	LockCappedTenantsSQL = lockCappedTenantsSQL
	ApproveTrustSQL      = approveTrustSQL
	ResetTrustSQL        = resetTrustSQL
	RunbookCostSQL       = runbookCostSQL
	WriteOutcomesSQL     = writeOutcomesSQL
	TenantBudgetsSQL     = tenantBudgetsSQL
	CountUnreservedSQL   = countUnreservedSQL
	WakeWaitersSQL       = wakeUnreservedWaitersSQL
	DropIdleUnreserved   = dropIdleUnreservedSQL
)

// OutcomeArgsForTest lays outcomes out as WriteOutcomesSQL's parameters.
func OutcomeArgsForTest(os []driver.Outcome) []any { return outcomeArgs(os) }

// RowsForTest runs a query and returns its rows' values.
func (t *Tx) RowsForTest(ctx context.Context, sql string, args ...any) ([][]any, error) {
	rows, err := t.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	return out, translate(err)
}
