package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
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

// NewDatabase creates a database of its own on the test server, runs
// setup in it (the application's tables pg.crud works on), and returns
// its URL and how to drop it, for harnesses that have no testing.TB (a
// testscript command). Tables in a database of its own do not meet
// another test's tables of the same name.
func NewDatabase(setup string) (dbURL string, drop func() error, err error) {
	if serverURL == "" {
		return "", nil, fmt.Errorf("no server; call pgtest.Main or pgtest.Wrap from TestMain")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "d_" + hex.EncodeToString(b[:])
	if err := execSQL(serverURL, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	drop = func() error { return execSQL(serverURL, "DROP DATABASE "+name+" WITH (FORCE)") }
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	if setup != "" {
		if err := execSQL(u.String(), setup); err != nil {
			_ = drop()
			return "", nil, err
		}
	}
	return u.String(), drop, nil
}
