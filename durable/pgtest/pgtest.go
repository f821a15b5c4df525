// Package pgtest gives tests a real PostgreSQL: the server named by
// TEST_DATABASE_URL when it is set, and otherwise a throwaway cluster
// started from the installed binaries for the test binary's lifetime. Each
// test gets a fresh, migrated schema of its own, so tests run in parallel.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		store := pgtest.Store(t)
//		...
//	}
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/localpg"
)

// serverURL is the server every test's schema lives on.
var serverURL string

// FastSettings make a throwaway cluster quick: nothing it holds needs to
// survive a crash of the machine. Never use them for data that matters.
var FastSettings = map[string]string{
	"fsync":              "off",
	"synchronous_commit": "off",
	"full_page_writes":   "off",
	"max_connections":    "300",
	"shared_buffers":     "128MB",
}

// Main runs the tests of a package against PostgreSQL and exits. After the
// tests pass it checks that none left a goroutine running.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// Runner runs a test binary's tests: a *testing.M, or a wrapper of one.
type Runner interface{ Run() int }

// Wrap returns a Runner that runs m's tests against PostgreSQL, as Main
// does, for a TestMain that hands its tests to another harness:
//
//	func TestMain(m *testing.M) { testscript.Main(pgtest.Wrap(m), commands) }
func Wrap(m Runner) Runner { return wrapped{m} }

type wrapped struct{ m Runner }

func (w wrapped) Run() int { return run(w.m) }

func run(m Runner) int {
	stop, err := start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: goroutines left running after the tests: %v\n", err)
			return 1
		}
	}
	return code
}

// start finds or starts the server (with FastSettings, unless
// PGTEST_DURABLE is set), returning how to stop what it started.
func start() (stop func(), err error) {
	if url := os.Getenv("TEST_DATABASE_URL"); url != "" {
		serverURL = url
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "rbd-test-pg-")
	if err != nil {
		return nil, err
	}
	// The cluster may run as the postgres user, who must reach it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	settings := FastSettings
	if os.Getenv("PGTEST_DURABLE") != "" {
		// Benchmarks measure what a deployment would see: every commit
		// reaches the disk.
		settings = map[string]string{"max_connections": "300", "shared_buffers": "128MB"}
	}
	srv, err := localpg.Start(ctx, localpg.Options{Dir: filepath.Join(dir, "data"), Settings: settings})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	serverURL = srv.URL("postgres")
	return func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		}
		os.RemoveAll(dir)
	}, nil
}

// ServerURL is the URL of the test server's database. Tests that need a
// schema should use Schema or Store instead.
func ServerURL(t testing.TB) string {
	t.Helper()
	if serverURL == "" {
		t.Fatal("pgtest: no server; call pgtest.Main from TestMain")
	}
	return serverURL
}

// DatabaseURL is the test server's database, or "" before Main or Wrap
// started it: for harnesses that have no testing.TB.
func DatabaseURL() string { return serverURL }

// Schema creates an empty schema for t, dropped when t ends, and returns
// its name.
func Schema(t testing.TB) string {
	t.Helper()
	name, drop, err := NewSchema()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return name
}

// NewSchema creates an empty schema and returns its name and how to drop
// it, for harnesses that have no testing.TB (a testscript Setup).
func NewSchema() (name string, drop func() error, err error) {
	if serverURL == "" {
		return "", nil, fmt.Errorf("no server; call pgtest.Main or pgtest.Wrap from TestMain")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "t_" + hex.EncodeToString(b[:])
	if err := execSQL(serverURL, "CREATE SCHEMA "+name); err != nil {
		return "", nil, err
	}
	return name, func() error { return execSQL(serverURL, "DROP SCHEMA "+name+" CASCADE") }, nil
}

// Store opens a store on a fresh, migrated schema of t's own; it is closed
// and the schema dropped when t ends.
func Store(t testing.TB) *durable.Store {
	t.Helper()
	store := Open(t, Schema(t))
	if _, err := store.Migrate(context.Background()); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return store
}

// StoreWith is Store with the store's configuration changed by with
// first (a statement log, say).
func StoreWith(t testing.TB, with func(*durable.Config)) *durable.Store {
	t.Helper()
	cfg := durable.Config{URL: ServerURL(t), Schema: Schema(t)}
	with(&cfg)
	store := open(t, cfg)
	if _, err := store.Migrate(context.Background()); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return store
}

// StoreAt opens a store on a fresh schema of t's own migrated only up to
// version, as an older rbd left it: for tests of what a later migration
// does to the rows an older one wrote. Store.Migrate then brings it up to
// date.
func StoreAt(t testing.TB, version int32) *durable.Store {
	t.Helper()
	store := Open(t, Schema(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.MigrateTo(ctx, version); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return store
}

// MigrationVersion is the version a migration file brings the schema to,
// found by its name (its number may change while branches are merged):
// "tenant_request_keys" for 017_tenant_request_keys.sql.
func MigrationVersion(t testing.TB, name string) int32 {
	t.Helper()
	v, err := durable.MigrationVersion(name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return v
}

// Open opens a store on an existing schema, closed when t ends.
func Open(t testing.TB, schema string) *durable.Store {
	t.Helper()
	return open(t, durable.Config{URL: ServerURL(t), Schema: schema})
}

func open(t testing.TB, cfg durable.Config) *durable.Store {
	t.Helper()
	store, err := durable.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(store.Close)
	return store
}

func execSQL(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// ExampleStore opens a store on a fresh, migrated schema for a runnable
// example, which has no *testing.T; done closes it and drops the schema.
func ExampleStore() (store *durable.Store, done func()) {
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "x_" + hex.EncodeToString(b[:])
	store, err := durable.Open(ctx, durable.Config{URL: serverURL, Schema: schema})
	if err != nil {
		panic(err)
	}
	if _, err := store.Migrate(ctx); err != nil {
		panic(err)
	}
	return store, func() {
		store.Close()
		conn, err := pgx.Connect(ctx, serverURL)
		if err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			_ = conn.Close(ctx)
		}
	}
}

// ExecIn runs a statement in the store's schema on a connection of its
// own: for tests that need what the store never does, kept out of the
// store's API.
func ExecIn(t testing.TB, store *durable.Store, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(ServerURL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.RuntimeParams["search_path"] = store.Schema()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Conn opens a connection of its own in the store's schema, closed when t
// ends: for what a test does beside the store (filling history).
func Conn(t testing.TB, store *durable.Store) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(ServerURL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.RuntimeParams["search_path"] = store.Schema()
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TerminateListeners cuts every connection that is listening on the
// store's wake-up channel, as a network failure would.
func TerminateListeners(t testing.TB, store *durable.Store) {
	t.Helper()
	ExecIn(t, store, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query = $1`, "LISTEN "+pgx.Identifier{store.Channel()}.Sanitize())
}
