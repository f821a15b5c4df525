package durable_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/migrations"
	"github.com/runbookdev/runbook/rbtype"
)

// appSchema makes a schema of the test's own holding the application's
// deals table, as crm.deals is in the examples.
func appSchema(t *testing.T) string {
	t.Helper()
	s := pgtest.Schema(t)
	pgtest.Exec(t, fmt.Sprintf(`CREATE TABLE %s.deals (
		deal_id serial PRIMARY KEY, company text UNIQUE NOT NULL, stage text, score numeric,
		ref uuid NOT NULL DEFAULT gen_random_uuid())`, s))
	return s
}

func TestCRUDRunsEachOperation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := appSchema(t)
	pool := pgtest.CRUD(t, "public")
	table := app + ".deals"
	crud := func(r driver.CRUDRequest) []map[string]any {
		t.Helper()
		r.Table = table
		rows, err := pool.CRUD(ctx, r)
		require.NoError(t, err)
		return rows
	}

	rows := crud(driver.CRUDRequest{Op: rbtype.CRUDInsert, Columns: []string{"company", "stage"}, Returning: []string{"deal_id", "ref"},
		Values: map[string]any{"company": "Acme", "stage": "sourced"}})
	require.Len(t, rows, 1)
	require.Equal(t, int32(1), rows[0]["deal_id"])
	require.IsType(t, uuid.UUID{}, rows[0]["ref"], "a uuid comes back as one, so a result shows it as text")

	rows = crud(driver.CRUDRequest{Op: rbtype.CRUDUpsert, Columns: []string{"stage"}, Key: []string{"company"}, Returning: []string{"deal_id", "stage"},
		Values: map[string]any{"company": "Acme", "stage": "contacted"}})
	require.Equal(t, []map[string]any{{"deal_id": int32(1), "stage": "contacted"}}, rows)

	rows = crud(driver.CRUDRequest{Op: rbtype.CRUDUpdate, Columns: []string{"stage"}, Key: []string{"company"}, Returning: []string{"stage"},
		Values: map[string]any{"company": "Acme", "stage": "x'; DROP TABLE deals; --"}})
	require.Equal(t, []map[string]any{{"stage": "x'; DROP TABLE deals; --"}}, rows, "a value is never SQL")

	rows = crud(driver.CRUDRequest{Op: rbtype.CRUDSelect, Key: []string{"company"}, Returning: []string{"company", "stage"},
		Values: map[string]any{"company": "Acme"}})
	require.Equal(t, []map[string]any{{"company": "Acme", "stage": "x'; DROP TABLE deals; --"}}, rows)

	rows = crud(driver.CRUDRequest{Op: rbtype.CRUDDelete, Key: []string{"company"}, Returning: []string{"deal_id"},
		Values: map[string]any{"company": "Acme"}})
	require.Equal(t, []map[string]any{{"deal_id": int32(1)}}, rows)
	require.Empty(t, crud(driver.CRUDRequest{Op: rbtype.CRUDSelect}))

	// Unqualified names resolve in the pool's schema, the application's.
	inApp := pgtest.CRUD(t, app)
	rows, err := inApp.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDInsert, Columns: []string{"company"}, Table: "deals", Returning: []string{"company"},
		Values: map[string]any{"company": "Globex"}})
	require.NoError(t, err)
	require.Equal(t, []map[string]any{{"company": "Globex"}}, rows)
	require.Equal(t, app, inApp.Schema())
}

// TestCRUDRoleReachesOnlyItsGrants sets up the two roles of
// docs/daemon.md: rbd's owns its schema and nothing more, pg.crud's is
// granted the application's table. pg.crud's pool, asked directly (past
// the handler's check of names), cannot read or change any of rbd's
// tables, or the catalogs' secrets; rbd's rows stay as they were.
func TestCRUDRoleReachesOnlyItsGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	daemonRole, crudRole, daemonSchema := "rbd_"+suffix, "crud_"+suffix, "rbd_"+suffix
	// Registered first, so it runs last, when the pools are closed.
	t.Cleanup(func() {
		pgtest.Exec(t, fmt.Sprintf(`DROP SCHEMA IF EXISTS %[1]s CASCADE; DROP OWNED BY %[2]s; DROP ROLE %[2]s; DROP ROLE %[3]s`,
			daemonSchema, crudRole, daemonRole))
	})
	pgtest.Exec(t, fmt.Sprintf(`
		CREATE ROLE %[1]s LOGIN PASSWORD 'pw' NOSUPERUSER NOCREATEDB NOCREATEROLE;
		CREATE SCHEMA %[2]s AUTHORIZATION %[1]s;
		CREATE ROLE %[3]s LOGIN PASSWORD 'pw' NOSUPERUSER NOCREATEDB NOCREATEROLE`, daemonRole, daemonSchema, crudRole))
	app := appSchema(t)
	pgtest.Exec(t, fmt.Sprintf(`
		GRANT USAGE ON SCHEMA %[1]s TO %[2]s;
		GRANT SELECT, INSERT, UPDATE, DELETE ON %[1]s.deals TO %[2]s;
		GRANT USAGE ON SEQUENCE %[1]s.deals_deal_id_seq TO %[2]s`, app, crudRole))

	// rbd, as its own role, migrates its schema (which exists: the role
	// may not create schemas) and keeps a runbook there.
	store, err := durable.Open(ctx, durable.Config{URL: pgtest.URLAs(t, daemonRole, "pw"), Schema: daemonSchema})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	_, err = store.Migrate(ctx)
	require.NoError(t, err)
	n := newRunbook(1)
	require.NoError(t, store.InTx(ctx, func(tx driver.Tx) error {
		_, _, err := tx.CreateRunbook(ctx, n)
		return err
	}))
	before, err := store.Runbook(ctx, n.ID)
	require.NoError(t, err)

	pool := pgtest.CRUDAs(t, pgtest.URLAs(t, crudRole, "pw"), app)
	_, err = pool.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDInsert, Columns: []string{"company"}, Table: "deals", Values: map[string]any{"company": "Acme"}})
	require.NoError(t, err, "what it was granted, it may do")

	for _, rel := range migrations.Relations() {
		_, err := pool.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: daemonSchema + "." + rel})
		require.ErrorIs(t, err, driver.ErrForbidden, rel)
	}
	_, err = pool.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDUpdate, Columns: []string{"status"}, Table: daemonSchema + ".runbooks", Key: []string{"id"},
		Values: map[string]any{"id": n.ID, "status": "cancelled"}})
	require.ErrorIs(t, err, driver.ErrForbidden)
	_, err = pool.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDDelete, Table: daemonSchema + ".runbooks", Key: []string{"id"},
		Values: map[string]any{"id": n.ID}})
	require.ErrorIs(t, err, driver.ErrForbidden)
	_, err = pool.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: "runbooks"})
	require.ErrorContains(t, err, `relation "runbooks" does not exist`, "unqualified, the name resolves in the application's schema")
	_, err = pool.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: "pg_catalog.pg_authid"})
	require.ErrorIs(t, err, driver.ErrForbidden)

	after, err := store.Runbook(ctx, n.ID)
	require.NoError(t, err)
	require.Equal(t, before, after, "rbd's rows are as they were")

	// And rbd's role has nothing of the application's.
	err = store.InTestTx(ctx, func(tx *durable.Tx) error {
		return tx.ExecForTest(ctx, "SELECT * FROM "+app+".deals")
	})
	require.ErrorIs(t, err, driver.ErrForbidden)
}

// TestRelationsAreRBDsTables pins migrations.Relations, the list pg.crud's
// rule refuses unqualified, to what the migrations really create.
func TestRelationsAreRBDsTables(t *testing.T) {
	t.Parallel()
	store := pgtest.Store(t)
	got, err := store.RelationsForTest(context.Background())
	require.NoError(t, err)
	require.Equal(t, got, migrations.Relations())
	require.Contains(t, got, migrations.VersionTable)
}

// A dry run of a pg.crud statement says what it would return, with the
// table's constraints checked, and changes nothing.
func TestCRUDDryRunRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := appSchema(t)
	pool := pgtest.CRUD(t, "public")
	table := app + ".deals"
	insert := driver.CRUDRequest{Op: rbtype.CRUDInsert, Table: table, Columns: []string{"company", "stage"}, Returning: []string{"company", "stage"},
		Values: map[string]any{"company": "Acme", "stage": "sourced"}, DryRun: true}
	rows, err := pool.CRUD(ctx, insert)
	require.NoError(t, err)
	require.Equal(t, []map[string]any{{"company": "Acme", "stage": "sourced"}}, rows, "what the insert would return")
	rows, err = pool.CRUD(ctx, driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: table})
	require.NoError(t, err)
	require.Empty(t, rows, "nothing was inserted")

	// A constraint the commit would break, the dry run breaks too.
	insert.DryRun = false
	_, err = pool.CRUD(ctx, insert)
	require.NoError(t, err)
	insert.DryRun = true
	_, err = pool.CRUD(ctx, insert)
	require.ErrorIs(t, err, driver.ErrConflict, "company is unique")
}
