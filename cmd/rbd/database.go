package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/localpg"
)

// databaseFlags say which PostgreSQL to use: the one at --database-url,
// or the embedded one that rbd starts itself under --data-dir.
type databaseFlags struct {
	url      string
	dataDir  string
	schema   string
	maxConns int
}

func (d *databaseFlags) register(fs *cli.EnvFlags) {
	fs.StringVar(&d.url, "database-url", "", "PostgreSQL connection string; without it rbd starts its own PostgreSQL under --data-dir")
	fs.Env("database-url", "DATABASE_URL")
	fs.StringVar(&d.dataDir, "data-dir", ".rbd", "where the embedded PostgreSQL keeps its data")
	fs.Env("data-dir", "RBD_DATA_DIR")
	fs.StringVar(&d.schema, "schema", "public", "the PostgreSQL schema holding rbd's tables")
	fs.Env("schema", "RBD_SCHEMA")
	fs.IntVar(&d.maxConns, "db-max-conns", 0, "most connections in the pool (0: enough for the workers and the API: 2 per advancer plus 8)")
	fs.Env("db-max-conns", "RBD_DB_MAX_CONNS")
}

// database is an open store, and the embedded server when rbd started one.
type database struct {
	store    *durable.Store
	embedded *localpg.Server
}

// open connects to the database, starting the embedded server first when
// no URL was given.
func (d *databaseFlags) open(ctx context.Context, log *slog.Logger) (*database, error) {
	db := &database{}
	url := d.url
	if url == "" {
		dir := filepath.Join(d.dataDir, "pg")
		srv, err := localpg.Start(ctx, localpg.Options{Dir: dir})
		if errors.Is(err, localpg.ErrNoBinaries) {
			return nil, fmt.Errorf("no --database-url (DATABASE_URL) was given, and rbd cannot start its own PostgreSQL: %w", err)
		}
		if err != nil {
			return nil, fmt.Errorf("error starting the embedded PostgreSQL in %s: %w", dir, err)
		}
		db.embedded = srv
		url = srv.URL("postgres")
		log.Info("started the embedded PostgreSQL", "data_dir", srv.Dir(), "database_url", url)
	}
	store, err := durable.Open(ctx, durable.Config{URL: url, Schema: d.schema, MaxConns: int32(d.maxConns)})
	if err != nil {
		db.close(log)
		return nil, err
	}
	db.store = store
	return db, nil
}

func (db *database) close(log *slog.Logger) {
	if db.store != nil {
		db.store.Close()
	}
	if db.embedded != nil {
		if err := db.embedded.Stop(); err != nil {
			log.Error("stopping the embedded PostgreSQL", "err", err)
		} else {
			log.Info("stopped the embedded PostgreSQL")
		}
	}
}
