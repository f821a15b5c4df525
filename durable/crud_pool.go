package durable

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"
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
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("error parsing pg.crud's database URL: %w", err)
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	pcfg.ConnConfig.RuntimeParams["search_path"] = cfg.Schema
	if pcfg.ConnConfig.RuntimeParams["application_name"] == "" {
		pcfg.ConnConfig.RuntimeParams["application_name"] = "rbd pg.crud"
	}
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = cfg.MaxConns
	}
	// A uuid column comes back as uuid.UUID, which a step's result
	// encodes as its canonical string, not as sixteen numbers.
	pcfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		pgxuuid.Register(conn.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting pg.crud to its database: %w", translate(err))
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting pg.crud to its database: %w", translate(err))
	}
	return &CRUDPool{pool: pool, schema: cfg.Schema}, nil
}

// Close closes every connection.
func (p *CRUDPool) Close() { p.pool.Close() }

// Schema is the pool's search_path.
func (p *CRUDPool) Schema() string { return p.schema }
