package durable_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable/pgtest"
)

// Migration 027 (docs/design/runtime.md, "Tables"): the ledger's stored
// rows and every edge stay readable, through the same names, as they
// were. An edge the runbook's plan holds is read from the plan; one it
// does not hold stays a row; a ledger row stays a row.
func TestImplicitRowsMigrationKeepsEveryEdgeAndLedgerRow(t *testing.T) {
	ctx := context.Background()
	store := pgtest.StoreAt(t, pgtest.MigrationVersion(t, "implicit_rows")-1)
	a, b := uuid.New(), uuid.New()
	pgtest.ExecIn(t, store, `INSERT INTO runbooks (id, plan, plan_hash, request_key) VALUES
		($1, '{"edges":[{"from":"s1","to":"s2","kind":"data"},{"from":"s2","to":"s3","kind":"sequence"}]}', 'h', 'a'),
		($2, '{"schema_version":1}', 'h', 'b')`, a, b)
	pgtest.ExecIn(t, store, `INSERT INTO runbook_edges (runbook_id, from_key, to_key, kind) VALUES
		($1, 's1', 's2', 'data'), ($1, 's2', 's3', 'sequence'), ($1, 'x', 's3', 'settle'), ($2, 'p', 'q', 'data')`, a, b)
	pgtest.ExecIn(t, store, `INSERT INTO step_attempts (attempt_id, runbook_id, tenant, step_key, verb, attempt, finished_at, outcome)
		VALUES ($1, $2, 'default', 's1', 'v', 1, now(), 'succeeded')`, uuid.New(), a)
	conn := pgtest.Conn(t, store)
	edges := func() []string {
		rows, err := conn.Query(ctx, `SELECT runbook_id::text || ' ' || from_key || '>' || to_key || ' ' || kind FROM runbook_edges ORDER BY 1`)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		return out
	}
	var ledger int
	before := edges()
	require.Len(t, before, 4)

	_, err := store.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, before, edges(), "every edge reads as before")
	var stored int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM runbook_edge_rows`).Scan(&stored))
	require.Equal(t, 2, stored, "the edges no plan holds stay rows; the others are read from the plans")
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM step_attempts WHERE runbook_id = $1`, a).Scan(&ledger))
	require.Equal(t, 1, ledger)
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM step_attempt_rows`).Scan(&ledger))
	require.Equal(t, 1, ledger)
}
