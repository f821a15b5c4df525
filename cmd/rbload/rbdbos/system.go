package main

import (
	"context"
	"fmt"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// setup creates DBOS's system tables in the schema with DBOS's own
// migrator, as DBOS's users would (dbos.Migrate), without launching it.
func setup(ctx context.Context, o options) error {
	return dbos.Migrate(ctx, o.databaseURL, dbos.WithMigrateSchema(o.schema), dbos.WithMigrateLogger(logger))
}

// launch starts DBOS on the schema setup migrated, with a pool of
// o.maxConns connections (one of them DBOS's LISTEN connection), after
// register has registered the workflows: DBOS requires them before Launch.
// The returned stop shuts DBOS down and closes the pool.
func launch(ctx context.Context, o options, register func(dbos.Context)) (dbos.Context, *pgxpool.Pool, func(), error) {
	cfg, err := pgxpool.ParseConfig(o.databaseURL)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.MaxConns = int32(o.maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	dctx, err := dbos.NewContext(ctx, dbos.Config{
		AppName:        "rbdbos",
		SystemDBPool:   pool,
		DatabaseSchema: o.schema,
		Logger:         logger,
		SkipMigrations: true,
	})
	if err != nil {
		pool.Close()
		return nil, nil, nil, fmt.Errorf("dbos: %w", err)
	}
	register(dctx)
	if err := dbos.Launch(dctx); err != nil {
		_ = dbos.Shutdown(dctx, 10*time.Second)
		pool.Close()
		return nil, nil, nil, fmt.Errorf("dbos launch: %w", err)
	}
	stop := func() {
		if err := dbos.Shutdown(dctx, 30*time.Second); err != nil {
			logf("shutdown: %v", err)
		}
		pool.Close()
	}
	return dctx, pool, stop, nil
}

// table names one of DBOS's system tables in the schema, quoted.
func table(o options, name string) string {
	return pgx.Identifier{o.schema, name}.Sanitize()
}
