package durable

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"
)

// poolConfig says how to open one of the daemon's pools: the engine's
// (Store) or pg.crud's (CRUDPool).
type poolConfig struct {
	url      string
	schema   string // the search_path of every connection
	appName  string // application_name, unless the URL sets one
	maxConns int32  // zero: pgxpool's default
	what     string // names the pool in errors
	tracer   pgx.QueryTracer
}

// openPool connects a pool and checks that the database answers.
func openPool(ctx context.Context, c poolConfig) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(c.url)
	if err != nil {
		return nil, fmt.Errorf("error parsing %s URL: %w", c.what, err)
	}
	pcfg.ConnConfig.RuntimeParams["search_path"] = c.schema
	if pcfg.ConnConfig.RuntimeParams["application_name"] == "" {
		pcfg.ConnConfig.RuntimeParams["application_name"] = c.appName
	}
	if c.maxConns > 0 {
		pcfg.MaxConns = c.maxConns
	}
	if c.tracer != nil {
		pcfg.ConnConfig.Tracer = c.tracer
	}
	// google/uuid's UUID is encoded and decoded as binary uuid, not
	// through its text form: at runtime throughput, the text path was a
	// fifth of the worker's CPU; and a pg.crud uuid column comes back as
	// uuid.UUID, which a step's result encodes as its canonical string.
	pcfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		pgxuuid.Register(conn.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to %s: %w", c.what, translate(err))
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to %s: %w", c.what, translate(err))
	}
	return pool, nil
}
