package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/durable/localpg"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// exitOf runs rbd with args and environment until it exits, returning its
// exit status and output.
func (e *daemonEnv) exitOf(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(rbdBinary(), args...)
	cmd.Env = append(append(os.Environ(), "RBD_TEST_MAIN=1", "RBD_LISTEN=127.0.0.1:0", "RBD_SCHEMA="+e.schema,
		"DATABASE_URL="+pgtest.DatabaseURL()), append(e.env, env...)...)
	out, err := cmd.CombinedOutput()
	if exitErr, ok := err.(*exec.ExitError); ok {
		return exitErr.ExitCode(), string(out)
	}
	require.NoError(t, err, string(out))
	return 0, string(out)
}

// TestDaemonRefusesVerbsNamingItsTables: rbd serve checks pg.crud's
// tables against its own --schema when it loads the verbs, and does not
// start when one names its state (V015).
func TestDaemonRefusesVerbsNamingItsTables(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	tables := []string{
		e.schema + ".runbooks",
		strings.ToUpper(e.schema) + ".Runbooks",
		`"` + e.schema + `"."step_leases"`,
		"runbooks", "step_leases", "action_receipts", "schema_version", "pg_catalog.pg_authid",
	}
	var src strings.Builder
	for i, table := range tables {
		fmt.Fprintf(&src, "- {name: v%d, domain: evil, execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: select, table: '%s'}}}\n",
			i, table)
	}
	verbs := e.file(t, "verbs/evil.yaml", src.String())
	code, out := e.exitOf(t, nil, "serve", "--verbs", verbs)
	require.Equal(t, exitFailed, code, out)
	failure := loggedField(t, out, "rbd serve failed", "err")
	require.Contains(t, failure, "the verb definitions have errors")
	for i, table := range tables {
		require.Contains(t, failure, fmt.Sprintf("evil.yaml:%d:", i+1), table)
		require.Contains(t, failure, fmt.Sprintf("error[V015]: table %q", table))
	}

	// The same verbs against another daemon's schema are the
	// application's tables, but for the names that are rbd's anywhere.
	ok := e.file(t, "verbs/ok.yaml", `
- {name: deals, domain: crm, execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: select, table: crm.deals}}}
- {name: runbooks, domain: crm, execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: select, table: crm.runbooks}}}
`)
	d := e.start(t, "--verbs", ok)
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
}

// psql runs one statement with the installed psql and returns its output
// and whether it succeeded: for looking at a server that rbd started, to
// which no Go package of ours connects but durable.
func psql(t *testing.T, dbURL, sql string) (string, bool) {
	t.Helper()
	bin, err := localpg.FindBinaries()
	require.NoError(t, err)
	out, err := exec.Command(filepath.Join(bin, "psql"), dbURL, "-v", "ON_ERROR_STOP=1", "-Atc", sql).CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// withUser is dbURL for another role.
func withUser(t *testing.T, dbURL, role string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.User(role)
	return u.String()
}

// TestEmbeddedRolesWallOffPGCRUD runs the embedded default: rbd connects
// as a role that owns its schema and nothing more, pg.crud as one that
// may use the public schema's tables and nothing of rbd's, and a verb on
// the application's table works end to end.
func TestEmbeddedRolesWallOffPGCRUD(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "DATABASE_URL=", "RBD_SCHEMA=")
	root, err := os.MkdirTemp("", "rbd-embedded-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o755))
	verbs := e.file(t, "verbs/app.yaml", `
- name: add-deal
  domain: app
  execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: insert, table: deals, columns: [company], returning: [deal_id, company]}}
  input_schema:
    required: [company]
    properties:
      company: {type: string}
`)
	d := e.start(t, "--data-dir", filepath.Join(root, ".rbd"), "--verbs", verbs)
	require.NotContains(t, d.logs.String(), "pg.crud connects with rbd's own role")
	rbdURL := loggedDatabaseURL(t, d.logs.String())
	require.Equal(t, "rbd", mustParse(t, rbdURL).User.Username())
	superuser, crudRole := withUser(t, rbdURL, "postgres"), withUser(t, rbdURL, "rbd_crud")

	// The application's table, made by the superuser after rbd started.
	out, ok := psql(t, superuser, "CREATE TABLE public.deals (deal_id serial PRIMARY KEY, company text NOT NULL)")
	require.True(t, ok, out)
	ctx := context.Background()
	sub, err := d.client("").Submit(ctx, apitype.SubmitRequest{Source: `(app.add-deal :company "Acme" :as @d)`})
	require.NoError(t, err)
	var v *apitype.RunbookView
	waitUntil(t, "the runbook to complete", func() (bool, error) {
		v, err = d.client("").Get(ctx, sub.ID.String())
		return err == nil && v.Status != rbtype.RunbookExecuting, err
	})
	require.Equal(t, rbtype.RunbookComplete, v.Status, "%+v", v.Steps)
	require.JSONEq(t, `{"deal_id": 1, "company": "Acme"}`, string(v.Outcomes["d"]))

	for _, role := range []string{rbdURL, crudRole} {
		out, ok = psql(t, role, "SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user")
		require.True(t, ok, out)
		require.Equal(t, "f|f|f", out, "neither role is more than it needs")
	}
	out, ok = psql(t, superuser, "SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'rbd'")
	require.True(t, ok, out)
	require.Equal(t, "rbd", out, "rbd's role owns rbd's schema")
	out, ok = psql(t, crudRole, "SELECT count(*) FROM rbd.runbooks")
	require.False(t, ok, "pg.crud's role cannot read rbd's tables, even asked directly")
	require.Contains(t, out, "permission denied for schema rbd")
	out, ok = psql(t, crudRole, "UPDATE rbd.runbooks SET status = 'cancelled'")
	require.False(t, ok)
	require.Contains(t, out, "permission denied for schema rbd")
	out, ok = psql(t, rbdURL, "SELECT count(*) FROM public.deals")
	require.False(t, ok, "and rbd's role has nothing of the application's")
	require.Contains(t, out, "permission denied for table deals")
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
}

func loggedDatabaseURL(t *testing.T, logs string) string {
	t.Helper()
	return loggedField(t, logs, "started the embedded PostgreSQL", "database_url")
}

// loggedField is a field of the first JSON log line with message msg.
func loggedField(t *testing.T, logs, msg, field string) string {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			v, _ := rec[field].(string)
			return v
		}
	}
	t.Fatalf("no %q line with %s in the logs:\n%s", msg, field, logs)
	return ""
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// TestManagedRolesFromTheDocs runs docs/daemon.md's SQL for a managed
// PostgreSQL, then a daemon with those two roles: it migrates its schema
// without any right to create one, and pg.crud works on crm.deals (named
// with its schema, and without, through --crud-schema).
func TestManagedRolesFromTheDocs(t *testing.T) {
	t.Parallel()
	block := docsBlock(t, "<!-- managed-roles -->")
	t.Cleanup(func() {
		pgtest.Exec(t, `DROP SCHEMA IF EXISTS rbd CASCADE; DROP SCHEMA IF EXISTS crm CASCADE;
			DROP OWNED BY rbd_crud; DROP OWNED BY rbd; DROP ROLE rbd_crud; DROP ROLE rbd`)
	})
	pgtest.Exec(t, `CREATE SCHEMA crm; CREATE TABLE crm.deals (deal_id serial PRIMARY KEY, company text UNIQUE NOT NULL, stage text)`)
	pgtest.Exec(t, block)

	e := newDaemonEnv(t)
	e.env = append(e.env, "RBD_SCHEMA=",
		"DATABASE_URL="+pgtest.URLAs(t, "rbd", "rbd-secret"),
		"RBD_CRUD_DATABASE_URL="+pgtest.URLAs(t, "rbd_crud", "crud-secret"),
		"RBD_CRUD_SCHEMA=crm")
	verbs := e.file(t, "verbs/crm.yaml", `
- name: apply
  domain: crm
  execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: upsert, table: crm.deals, key: [company], columns: [stage], returning: [deal_id, stage]}}
  input_schema:
    required: [company, stage]
    properties:
      company: {type: string}
      stage: {type: string}
- name: find
  domain: crm
  execution: {kind: sync, handler: pg.crud, side_effects: none, params: {op: select, table: deals, key: [company], returning: [stage]}}
  input_schema:
    required: [company]
    properties:
      company: {type: string}
`)
	d := e.start(t, "--verbs", verbs)
	require.NotContains(t, d.logs.String(), "pg.crud connects with rbd's own role")
	ctx := context.Background()
	sub, err := d.client("").Submit(ctx, apitype.SubmitRequest{Source: `
(crm.apply :company "Acme" :stage "won" :as @a)
(crm.find :company "Acme" :after [@a] :as @f)`})
	require.NoError(t, err)
	var v *apitype.RunbookView
	waitUntil(t, "the runbook to finish", func() (bool, error) {
		v, err = d.client("").Get(ctx, sub.ID.String())
		return err == nil && v.Status != rbtype.RunbookExecuting, err
	})
	require.Equal(t, rbtype.RunbookComplete, v.Status, "%+v", v.Steps)
	require.JSONEq(t, `{"deal_id": 1, "stage": "won"}`, string(v.Outcomes["a"]))
	require.JSONEq(t, `{"rows": [{"stage": "won"}], "count": 1}`, string(v.Outcomes["f"]))
	require.Equal(t, 0, d.stop(syscall.SIGTERM))

	out, ok := psql(t, pgtest.URLAs(t, "rbd_crud", "crud-secret"), "SELECT count(*) FROM rbd.runbooks")
	require.False(t, ok)
	require.Contains(t, out, "permission denied for schema rbd")
}

// docsBlock returns the SQL block that follows marker in docs/daemon.md.
func docsBlock(t *testing.T, marker string) string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/daemon.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(raw), marker)
	require.True(t, ok, "docs/daemon.md has no %s", marker)
	_, after, ok = strings.Cut(after, "```sql\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok)
	return block
}

// TestLegacyPublicTablesAreNotLeftBehind: on a database where an earlier
// rbd kept its tables in public, rbd does not begin afresh in a new
// schema beside them.
func TestLegacyPublicTablesAreNotLeftBehind(t *testing.T) {
	t.Parallel()
	var b [4]byte
	_, _ = rand.Read(b[:])
	db := "legacy_" + hex.EncodeToString(b[:])
	pgtest.Exec(t, "CREATE DATABASE "+db)
	t.Cleanup(func() { pgtest.Exec(t, "DROP DATABASE "+db+" WITH (FORCE)") })
	u := mustParse(t, pgtest.DatabaseURL())
	u.Path = "/" + db
	dbURL := u.String()

	var out, errOut strings.Builder
	require.Equal(t, exitOK, run([]string{"migrate", "--database-url", dbURL, "--schema", "public"}, &out, &errOut), errOut.String())
	out.Reset()
	require.Equal(t, exitCantRun, run([]string{"migrate", "--database-url", dbURL}, &out, &errOut))
	require.Contains(t, errOut.String(), `rbd's tables are in schema "public", where rbd kept them before --schema defaulted to "rbd", and schema "rbd" is new`)
	errOut.Reset()
	require.Equal(t, exitOK, run([]string{"migrate", "--database-url", dbURL, "--schema", "public"}, &out, &errOut), errOut.String())
}
