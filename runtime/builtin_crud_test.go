package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/migrations"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

// dealsSchema makes the application's schema of a test, with a deals
// table, as crm.deals is in the examples.
func dealsSchema(t *testing.T) string {
	t.Helper()
	app := pgtest.Schema(t)
	pgtest.Exec(t, fmt.Sprintf(`CREATE TABLE %s.deals (
		deal_id serial PRIMARY KEY, company text UNIQUE, stage text, stage_note text, score numeric)`, app))
	return app
}

func TestPGCRUD(t *testing.T) {
	t.Parallel()
	app := dealsSchema(t)
	deps := builtin.Deps{CRUD: pgtest.CRUD(t, app), DaemonSchema: "rbd"}
	crud := func(params map[string]any, args map[string]any) (any, error) {
		res, err := callBuiltin(t, deps, "pg.crud", &runtime.Call{Params: params, Args: args})
		return res.Value(), err
	}
	got, err := crud(map[string]any{"op": "insert", "table": "deals", "columns": []any{"company", "stage"}, "returning": []any{"deal_id"}},
		map[string]any{"company": "Acme", "stage": "sourced"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"deal_id": int32(1)}, got)

	// Schema-qualified, as verb files name the application's tables; an
	// argument's dashes are a column's underscores.
	got, err = crud(map[string]any{"op": "upsert", "table": app + ".deals", "key": []any{"company"}, "columns": []any{"stage", "stage_note"}, "returning": []any{"deal_id", "stage_note"}},
		map[string]any{"company": "Acme", "stage": "contacted", "stage-note": "called"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"deal_id": int32(1), "stage_note": "called"}, got)

	got, err = crud(map[string]any{"op": "select", "table": "deals", "key": []any{"company"}, "returning": []any{"stage"}},
		map[string]any{"company": "Acme"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"rows": []map[string]any{{"stage": "contacted"}}, "count": 1}, got)

	// A value is never SQL: a hostile string is just a string.
	_, err = crud(map[string]any{"op": "update", "table": "deals", "key": []any{"company"}, "columns": []any{"stage"}},
		map[string]any{"company": "Acme", "stage": "x'; DROP TABLE deals; --"})
	require.NoError(t, err)
	got, err = crud(map[string]any{"op": "delete", "table": "deals", "key": []any{"company"}, "returning": []any{"stage"}},
		map[string]any{"company": "Acme"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"stage": "x'; DROP TABLE deals; --"}, got)

	got, err = crud(map[string]any{"op": "delete", "table": "deals", "key": []any{"company"}}, map[string]any{"company": "Nobody"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"count": 0}, got)

	// Names are checked, never interpolated as given; the refusals are
	// final.
	for _, c := range []struct {
		params map[string]any
		args   map[string]any
		msg    string
	}{
		{map[string]any{"op": "select", "table": "deals; drop"}, nil, `table "deals; drop" is not a lower-case SQL identifier`},
		{map[string]any{"op": "select", "table": "deals", "returning": []any{"Stage"}}, nil, `pg.crud column "Stage" is not a lower-case SQL identifier`},
		{map[string]any{"op": "insert", "table": "deals"}, map[string]any{"stage note": "x"}, `pg.crud column "stage note" is not`},
		{map[string]any{"op": "insert", "table": "deals", "columns": []any{"company"}}, map[string]any{"score": 5}, `column "score" is not one the verb allows`},
		{map[string]any{"op": "truncate", "table": "deals"}, nil, `unknown op "truncate"`},
	} {
		_, err = crud(c.params, c.args)
		var e *runtime.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, rbtype.CodeInvalidInput, e.Code, c.msg)
		require.Contains(t, e.Message, c.msg)
		require.False(t, e.Retryable())
	}
}

// TestPGCRUDRefusesRBDsTablesAtRunTime: a plan may have been compiled
// elsewhere, so the handler applies the catalogue's rule again before it
// calls anything. The refusal is POLICY_DENIED, final.
func TestPGCRUDRefusesRBDsTablesAtRunTime(t *testing.T) {
	t.Parallel()
	tables := []string{
		"runbooks", "rbd.runbooks", "RBD.Runbooks", `"rbd"."runbooks"`, "rbd.runbook_events",
		"step_leases", "action_receipts", migrations.VersionTable, "pg_catalog.pg_authid", "pg_authid",
		"information_schema.tables",
	}
	for _, withDB := range []bool{false, true} {
		deps := builtin.Deps{} // no database: the check comes first
		if withDB {
			deps.CRUD = pgtest.CRUD(t, "public")
		}
		for _, table := range tables {
			for _, op := range []string{"select", "insert", "update", "delete", "upsert"} {
				_, err := callBuiltin(t, deps, "pg.crud", &runtime.Call{
					Params: map[string]any{"op": op, "table": table, "key": []any{"id"}},
					Args:   map[string]any{"id": "x", "status": "cancelled"},
				})
				var e *runtime.Error
				require.ErrorAs(t, err, &e, table)
				require.Equal(t, rbtype.CodePolicyDenied, e.Code, "%s %s: %s", op, table, e.Message)
				require.False(t, e.Retryable())
				require.ErrorIs(t, err, builtin.ErrDaemonTable)
			}
		}
	}
	// rbd's schema is the one the daemon says, not always "rbd".
	_, err := callBuiltin(t, builtin.Deps{DaemonSchema: "ops"}, "pg.crud", &runtime.Call{
		Params: map[string]any{"op": "select", "table": "ops.anything"}})
	require.ErrorIs(t, err, builtin.ErrDaemonTable)
}

// TestRunbookCannotChangeRBDsTablesThroughPGCRUD runs, on the engine, a
// plan whose verbs were checked against another schema than the
// daemon's (as a plan compiled by another rbc would be) and that aims
// pg.crud at the daemon's own tables, on a pool whose role could write
// them. The steps fail with POLICY_DENIED on their first attempt, and
// the runbook they aimed at is as it was.
func TestRunbookCannotChangeRBDsTablesThroughPGCRUD(t *testing.T) {
	b := setup(t)
	schema := b.store.Schema()
	b.handlers = runtime.NewHandlers(builtin.Deps{CRUD: pgtest.CRUD(t, "public"), DaemonSchema: schema})
	defs, diags := verbs.Parse("evil.yaml", []byte(fmt.Sprintf(`
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: tamper
  domain: evil
  execution:
    kind: sync
    handler: pg.crud
    side_effects: internal_db
    params: {op: update, table: %[1]s.runbooks, key: [id], columns: [status, error_message]}
    retry: {max_attempts: 3, backoff: fixed, base_delay: PT0.01S, max_delay: PT0.01S}
  input_schema: {required: [id]}
- name: erase
  domain: evil
  execution:
    kind: sync
    handler: pg.crud
    side_effects: internal_db
    params: {op: delete, table: %[1]s.runbook_events, key: [runbook_id]}
    retry: {max_attempts: 3, backoff: fixed, base_delay: PT0.01S, max_delay: PT0.01S}
  input_schema: {required: [runbook-id]}
`, schema)))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, b.handlers.Specs()) // checked against the default schema, not the daemon's
	require.Empty(t, diags)
	b.cat = cat
	b.newEngine()
	b.run(t)

	victim := b.submit(t, `(t.echo :v 1 :as @e)`, nil)
	before := b.waitStatus(t, victim, rbtype.RunbookComplete)
	eventsBefore := b.eventTypes(t, victim)

	attack := b.submit(t, fmt.Sprintf(`
(evil.tamper :id "%[1]s" :status "cancelled" :error-message "pwned" :as @t)
(evil.erase :runbook-id "%[1]s" :as @x)`, victim), nil)
	v := b.waitStatus(t, attack, rbtype.RunbookFailed)
	for _, key := range []string{"t", "x"} {
		s := step(v, key)
		require.Equal(t, rbtype.StepFailed, s.Status, key)
		require.Equal(t, 1, s.Attempt, "%s: a refusal is final, never retried", key)
		require.Equal(t, rbtype.CodePolicyDenied, s.Error.Code, key)
		require.Contains(t, s.Error.Message, "is in rbd's own schema")
	}

	after, err := b.engine.Get(b.ctx, victim)
	require.NoError(t, err)
	require.Equal(t, before, after, "the runbook aimed at is as it was")
	require.Equal(t, eventsBefore, b.eventTypes(t, victim), "its events are all there")
}

// TestPGCRUDEdges is the docs/reliability.md attack on pg.crud: a key argument left
// out must not widen a statement to every row, arguments may not choose
// columns the verb does not list, and the database's own errors (table
// and constraint names, SQLSTATEs) stay out of the step's error, which
// API callers read.
func TestPGCRUDEdges(t *testing.T) {
	t.Parallel()
	app := dealsSchema(t)
	deps := builtin.Deps{CRUD: pgtest.CRUD(t, app), DaemonSchema: "rbd"}
	crud := func(params map[string]any, args map[string]any) (any, error) {
		res, err := callBuiltin(t, deps, "pg.crud", &runtime.Call{Params: params, Args: args})
		return res.Value(), err
	}
	insert := map[string]any{"op": "insert", "table": "deals", "columns": []any{"company", "stage"}}
	for _, company := range []string{"Acme", "Globex"} {
		_, err := crud(insert, map[string]any{"company": company, "stage": "sourced"})
		require.NoError(t, err)
	}
	refused := func(params, args map[string]any, code rbtype.ErrorCode, msg string) *runtime.Error {
		t.Helper()
		_, err := crud(params, args)
		var e *runtime.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, code, e.Code, e.Message)
		require.Contains(t, e.Message, msg)
		require.False(t, e.Retryable())
		return e
	}
	key := []any{"company"}
	for _, op := range []string{"select", "update", "delete"} {
		params := map[string]any{"op": op, "table": "deals", "key": key, "columns": []any{"stage"}}
		refused(params, map[string]any{"stage": "lost"}, rbtype.CodeInvalidInput, "every key column (company) needs a value")
	}
	refused(map[string]any{"op": "select", "table": "deals", "key": []any{"company", "stage"}},
		map[string]any{"company": "Acme"}, rbtype.CodeInvalidInput, "every key column (company, stage) needs a value")

	// Columns come from the verb's params, never from the arguments.
	refused(map[string]any{"op": "insert", "table": "deals"},
		map[string]any{"company": "Initech", "score": 99}, rbtype.CodeInvalidInput, `column "company" is not one the verb allows`)
	refused(map[string]any{"op": "update", "table": "deals", "key": key},
		map[string]any{"company": "Acme", "score": 99}, rbtype.CodeInvalidInput, `column "score" is not one the verb allows`)
	refused(map[string]any{"op": "select", "table": "deals", "key": key},
		map[string]any{"company": "Acme", "score": 99}, rbtype.CodeInvalidInput, `column "score" is not one the verb allows`)

	got, err := crud(map[string]any{"op": "select", "table": "deals"}, nil)
	require.NoError(t, err, "a verb without a key may select every row")
	require.Equal(t, 2, got.(map[string]any)["count"])

	// The database's errors reach callers as a code and a safe message.
	for _, c := range []struct {
		params map[string]any
		args   map[string]any
		code   rbtype.ErrorCode
		secret []string
	}{
		{insert, map[string]any{"company": "Acme", "stage": "again"}, rbtype.CodeInvalidInput, []string{"deals_company_key", "23505", "SQLSTATE"}},
		{map[string]any{"op": "insert", "table": "nosuch", "columns": []any{"a"}}, map[string]any{"a": 1}, rbtype.CodeInvalidInput, []string{"nosuch", "42P01", "SQLSTATE"}},
		{map[string]any{"op": "insert", "table": "deals", "columns": []any{"nocolumn"}}, map[string]any{"nocolumn": 1}, rbtype.CodeInvalidInput, []string{"nocolumn", "42703", "SQLSTATE"}},
		{map[string]any{"op": "update", "table": "deals", "key": key, "columns": []any{"score"}}, map[string]any{"company": "Acme", "score": "high"}, rbtype.CodeInvalidInput, []string{"numeric", "22P02", "SQLSTATE"}},
	} {
		e := refused(c.params, c.args, c.code, "")
		for _, s := range c.secret {
			require.NotContains(t, e.Message, s)
		}
		require.Error(t, e.Err, "the database's error is kept for the log")
	}
}

// callBuiltin runs a built-in handler directly, outside any runbook.
func callBuiltin(t *testing.T, deps builtin.Deps, name string, c *handler.Call) (handler.Result, error) {
	t.Helper()
	h := builtin.Handlers(deps)[name]
	require.NotNil(t, h, name)
	if c.IdempotencyKey == "" {
		c.IdempotencyKey = "rbk-test-key"
	}
	return h.Call(context.Background(), c)
}
