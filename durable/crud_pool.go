package durable

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// CRUDConfig says how pg.crud reaches the application's database.
type CRUDConfig struct {
	// URL is a PostgreSQL connection string. Its role should be one of
	// pg.crud's own, granted only the application's tables: rbd's role
	// owns rbd's tables, and a verb file must not be able to touch them.
	URL string
	// Schema is the search_path, where unqualified table names resolve:
	// the application's schema, never rbd's. Empty means public.
	Schema string
	// MaxConns bounds the pool; zero means pgxpool's default (4 or the
	// number of CPUs, whichever is larger).
	MaxConns int32
}

// CRUDPool runs pg.crud's operations on the application's database. It is
// a pool of its own, apart from the Store's, so that its role and search
// path are the application's, not the engine's: a verb definition cannot
// reach the daemon's state through it.
type CRUDPool struct {
	pool   *pgxpool.Pool
	schema string
}

// OpenCRUD connects pg.crud's pool and checks that the database answers.
func OpenCRUD(ctx context.Context, cfg CRUDConfig) (*CRUDPool, error) {
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	pool, err := openPool(ctx, poolConfig{url: cfg.URL, schema: cfg.Schema, appName: "rbd pg.crud", maxConns: cfg.MaxConns, what: "pg.crud's database"})
	if err != nil {
		return nil, err
	}
	return &CRUDPool{pool: pool, schema: cfg.Schema}, nil
}

// Close closes every connection.
func (p *CRUDPool) Close() { p.pool.Close() }

// Schema is the pool's search_path.
func (p *CRUDPool) Schema() string { return p.schema }
