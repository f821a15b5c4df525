package pgtest

import (
	"context"
	"net/url"
	"testing"

	"github.com/runbookdev/runbook/durable"
)

// Exec runs SQL on the test server as its own user, for what a test must
// set up that no package's API does: the application's tables pg.crud
// works on, roles with limited grants.
func Exec(t testing.TB, sql string) {
	t.Helper()
	if err := execSQL(ServerURL(t), sql); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// URLAs is the test server's database URL for another role.
func URLAs(t testing.TB, role, password string) string {
	t.Helper()
	u, err := url.Parse(ServerURL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u.User = url.UserPassword(role, password)
	return u.String()
}

// CRUD opens pg.crud's pool on the test server as its own user, with
// schema as the search path; it is closed when t ends.
func CRUD(t testing.TB, schema string) *durable.CRUDPool {
	t.Helper()
	return CRUDAs(t, ServerURL(t), schema)
}

// CRUDAs opens pg.crud's pool at url (see URLAs), with schema as the
// search path; it is closed when t ends.
func CRUDAs(t testing.TB, url, schema string) *durable.CRUDPool {
	t.Helper()
	pool, err := durable.OpenCRUD(context.Background(), durable.CRUDConfig{URL: url, Schema: schema})
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
