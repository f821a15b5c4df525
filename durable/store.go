package durable

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runbookdev/runbook/driver"
)

// Config says how to connect.
type Config struct {
	// URL is a PostgreSQL connection string.
	URL string
	// Schema is where the tables live; empty means public. Every
	// connection sets its search_path to it.
	Schema string
	// MaxConns bounds the pool; zero means pgxpool's default (4 or the
	// number of CPUs, whichever is larger).
	MaxConns int32
	// Statements, when set, records every statement the store sends
	// (the query-plan tests).
	Statements *StatementLog
}

// The store is the runtime's: it implements driver's interfaces.
var (
	_ driver.Store = (*Store)(nil)
	_ driver.Tx    = (*Tx)(nil)
)

// Store is a pool of connections to the runbook database.
type Store struct {
	pool    *pgxpool.Pool
	config  Config
	channel string
}

// Open connects to the database. It does not migrate; call Migrate.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	pc := poolConfig{url: cfg.URL, schema: cfg.Schema, appName: "rbd", maxConns: cfg.MaxConns, what: "the database"}
	if cfg.Statements != nil {
		pc.tracer = cfg.Statements
	}
	pool, err := openPool(ctx, pc)
	if err != nil {
		return nil, err
	}
	return &Store{pool: pool, config: cfg, channel: channelName(cfg.Schema)}, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// Schema is the schema the store works in.
func (s *Store) Schema() string { return s.config.Schema }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return translate(s.pool.Ping(ctx)) }

// Tx is one transaction. Its methods are the store's operations; all of a
// runbook's state transitions happen inside one, under the runbook's
// advisory lock.
type Tx struct {
	tx    pgx.Tx
	store *Store
	// held are the advisory locks this transaction has taken (lockKeys),
	// so that taking one again costs no round trip; heldAtSavepoint is
	// what they were when StoreNotification set its savepoint, which a
	// rollback to it brings back.
	held, heldAtSavepoint map[int64]bool
}

// Begin starts a transaction.
func (s *Store) Begin(ctx context.Context) (driver.Tx, error) { return s.begin(ctx) }

func (s *Store) begin(ctx context.Context) (*Tx, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: beginEngineTx})
	if err != nil {
		return nil, translate(err)
	}
	return &Tx{tx: tx, store: s}, nil
}

// beginEngineTx begins the engine's transactions (every Store.Begin) with
// plans made once per connection and statement, which keep to indexes.
//
// PostgreSQL plans a prepared statement anew at every execution while it
// costs its generic plan above its custom ones, and it does for nearly
// every statement of the hot paths: they take arrays of ids, which a
// generic plan costs as ten elements and a custom one as the one or two
// it is given. That planning was a quarter of the database's CPU on a
// resume (BENCHMARKS.md, "What a resume costs PostgreSQL"). Forced
// generic plans alone scanned the small tables of a young deployment
// instead (an array of ten ids against a table of a thousand rows), so
// sequential scans are ruled out too: every statement of the hot paths
// reads its few rows through an index, at any size of the tables, which
// runtime/queryplan_test.go checks for each of them with history in the
// tables. A statement with no index to use still runs, as a scan. The
// settings end with the transaction; reads outside one (lists, views,
// reports), whose optional filters are what custom plans are for, keep
// PostgreSQL's defaults. They go with the BEGIN, in its round trip.
const beginEngineTx = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off"

// Commit commits the transaction.
func (t *Tx) Commit(ctx context.Context) error { return translate(t.tx.Commit(ctx)) }

// Rollback abandons the transaction. Its own error adds nothing: the
// transaction is gone either way.
func (t *Tx) Rollback(ctx context.Context) error {
	_ = t.tx.Rollback(context.WithoutCancel(ctx))
	return nil
}

// InTx runs fn in a transaction, committing when fn returns nil and rolling
// back otherwise: for tests and tools that drive the store directly. The
// runtime composes Begin, Commit and Rollback itself.
func (s *Store) InTx(ctx context.Context, fn func(driver.Tx) error) error {
	return s.inTx(ctx, func(t *Tx) error { return fn(t) })
}

// inTx is InTx for the store's own operations, which use the concrete Tx.
func (s *Store) inTx(ctx context.Context, fn func(*Tx) error) error {
	t, err := s.begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		_ = t.Rollback(ctx)
		return err
	}
	return t.Commit(ctx)
}

// channelName is the LISTEN/NOTIFY channel of a schema. PostgreSQL
// truncates identifiers at 63 bytes; a long schema name is shortened here,
// with a hash, so that two schemas never share a channel.
func channelName(schema string) string {
	name := "rbd_wake"
	if schema != "" && schema != "public" {
		name += "_" + strings.ToLower(schema)
	}
	if len(name) > 63 {
		name = fmt.Sprintf("%s_%016x", name[:46], lockKey([]byte(name)))
	}
	return name
}

// Channel is the NOTIFY channel wake-ups are sent on.
func (s *Store) Channel() string { return s.channel }
