package durable

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Test hooks: reach into the schema in ways the store never should.

// SetSchemaVersionForTest pretends a newer rbd migrated the database.
func (t *Tx) SetSchemaVersionForTest(ctx context.Context, version int32) error {
	_, err := t.tx.Exec(ctx, "UPDATE schema_version SET version = $1", version)
	return translate(err)
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
	SweepTimeoutsQuery = sweepTimeoutsQuery
	SweepLeasesQuery   = sweepLeasesQuery
	SweepRetriesQuery  = sweepRetriesQuery
	ClaimDueQuery      = claimDueQuery
)

// ReadyStepsSQL is the ready-steps query.
var ReadyStepsSQL = readyStepsQuery
