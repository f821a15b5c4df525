package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/localpg"
	"github.com/runbookdev/runbook/migrations"
)

// The roles of the embedded PostgreSQL: rbd's owns rbd's schema, pg.crud's
// is granted the application's; neither is a superuser.
const (
	embeddedDatabase   = "postgres"
	embeddedDaemonRole = "rbd"
	embeddedCRUDRole   = "rbd_crud"
)

// databaseFlags say which PostgreSQL to use: the one at --database-url,
// or the embedded one that rbd starts itself under --data-dir.
type databaseFlags struct {
	url      string
	dataDir  string
	schema   string
	maxConns int
	crud     *crudFlags // nil for commands that run no pg.crud
}

// crudFlags say where pg.crud works: the application's database, as a
// role of its own, with the application's schema as its search path.
type crudFlags struct {
	url    string
	schema string
}

func (d *databaseFlags) register(fs *cli.EnvFlags) {
	fs.StringVar(&d.url, "database-url", "", "PostgreSQL connection string; without it rbd starts its own PostgreSQL under --data-dir")
	fs.Env("database-url", "DATABASE_URL")
	fs.StringVar(&d.dataDir, "data-dir", ".rbd", "where the embedded PostgreSQL keeps its data")
	fs.Env("data-dir", "RBD_DATA_DIR")
	fs.StringVar(&d.schema, "schema", migrations.DefaultSchema, "the PostgreSQL schema holding rbd's tables; pg.crud may never use it")
	fs.Env("schema", "RBD_SCHEMA")
	fs.IntVar(&d.maxConns, "db-max-conns", 0, "most connections in the pool (0: enough for the workers and the API: 2 per advancer plus 8)")
	fs.Env("db-max-conns", "RBD_DB_MAX_CONNS")
}

// registerCRUD adds pg.crud's flags, for rbd serve.
func (d *databaseFlags) registerCRUD(fs *cli.EnvFlags) {
	d.crud = &crudFlags{}
	fs.StringVar(&d.crud.url, "crud-database-url", "", "PostgreSQL connection string for pg.crud, with a role of its own (default: --database-url; with the embedded PostgreSQL, its pg.crud role)")
	fs.Env("crud-database-url", "RBD_CRUD_DATABASE_URL")
	fs.StringVar(&d.crud.schema, "crud-schema", "public", "the application's schema, where pg.crud's unqualified table names resolve (its search_path); never --schema")
	fs.Env("crud-schema", "RBD_CRUD_SCHEMA")
}

// check refuses schema names pg.crud's rule could not tell apart, and a
// pg.crud search path that would be rbd's own schema.
func (d *databaseFlags) check() error {
	if err := builtin.CheckIdentifier(d.schema); err != nil {
		return fmt.Errorf("--schema: %w", err)
	}
	if d.crud == nil {
		return nil
	}
	if err := builtin.CheckIdentifier(d.crud.schema); err != nil {
		return fmt.Errorf("--crud-schema: %w", err)
	}
	if d.crud.schema == d.schema {
		return fmt.Errorf("--crud-schema is %q, rbd's own --schema: pg.crud works on the application's tables, never on rbd's", d.schema)
	}
	return nil
}

// database is an open store, pg.crud's pool when the command runs
// pg.crud, and the embedded server when rbd started one.
type database struct {
	store    *durable.Store
	crud     *durable.CRUDPool
	embedded *localpg.Server
}

// open connects to the database, starting the embedded server first when
// no URL was given. The embedded server's roles are prepared each time:
// rbd connects as one that owns its schema and nothing more, pg.crud as
// one granted the application's schema.
func (d *databaseFlags) open(ctx context.Context, log *slog.Logger) (*database, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	db := &database{}
	url, crudURL := d.url, ""
	if d.crud != nil {
		crudURL = d.crud.url
	}
	if url == "" {
		srv, err := d.startEmbedded(ctx)
		if err != nil {
			return nil, err
		}
		db.embedded = srv
		url = srv.RoleURL(embeddedDaemonRole, embeddedDatabase)
		if crudURL == "" {
			crudURL = srv.RoleURL(embeddedCRUDRole, embeddedDatabase)
		}
		log.Info("started the embedded PostgreSQL", "data_dir", srv.Dir(), "database_url", url)
	}
	store, err := durable.Open(ctx, durable.Config{URL: url, Schema: d.schema, MaxConns: int32(d.maxConns)})
	if err != nil {
		db.close(log)
		return nil, err
	}
	db.store = store
	if err := refuseLegacyTables(ctx, url, store); err != nil {
		db.close(log)
		return nil, err
	}
	if d.crud == nil {
		return db, nil
	}
	if crudURL == "" {
		crudURL = url
		log.Warn("pg.crud connects with rbd's own role: only the check of table names keeps verb files out of rbd's schema; give --crud-database-url a role of its own (docs/daemon.md)")
	}
	crud, err := durable.OpenCRUD(ctx, durable.CRUDConfig{URL: crudURL, Schema: d.crud.schema})
	if err != nil {
		db.close(log)
		return nil, err
	}
	db.crud = crud
	return db, nil
}

// startEmbedded starts the embedded server and prepares its roles.
func (d *databaseFlags) startEmbedded(ctx context.Context) (*localpg.Server, error) {
	dir := filepath.Join(d.dataDir, "pg")
	srv, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if errors.Is(err, localpg.ErrNoBinaries) {
		return nil, fmt.Errorf("no --database-url (DATABASE_URL) was given, and rbd cannot start its own PostgreSQL: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("error starting the embedded PostgreSQL in %s: %w", dir, err)
	}
	access := localpg.Access{Database: embeddedDatabase, DaemonRole: embeddedDaemonRole, DaemonSchema: d.schema}
	if d.crud != nil && d.crud.url == "" {
		access.CRUDRole, access.CRUDSchema = embeddedCRUDRole, d.crud.schema
	}
	if err := srv.Grant(ctx, access); err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("error preparing the embedded PostgreSQL's roles: %w", err)
	}
	return srv, nil
}

func (db *database) close(log *slog.Logger) {
	if db.crud != nil {
		db.crud.Close()
	}
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

// legacySchema is where rbd kept its tables before they had a schema of
// their own.
const legacySchema = "public"

// refuseLegacyTables refuses to start on a new schema while an earlier
// rbd's tables are in public: rbd would begin afresh, and the runbooks
// there would never be finished, nor anyone told.
func refuseLegacyTables(ctx context.Context, url string, store *durable.Store) error {
	if store.Schema() == legacySchema {
		return nil
	}
	status, err := store.MigrationStatus(ctx)
	if err != nil || status.Current > 0 {
		return err
	}
	legacy, err := durable.Open(ctx, durable.Config{URL: url, Schema: legacySchema, MaxConns: 1})
	if err != nil {
		return err
	}
	defer legacy.Close()
	status, err = legacy.MigrationStatus(ctx)
	switch {
	case errors.Is(err, driver.ErrForbidden):
		// The tables are there, and not this role's to read.
	case err != nil:
		return err
	case status.Current == 0:
		return nil
	}
	return fmt.Errorf("rbd's tables are in schema %q, where rbd kept them before --schema defaulted to %q, and schema %q is new: "+
		"give --schema %s (and a --crud-schema other than it) to go on with them, or move them to %q (docs/daemon.md)",
		legacySchema, migrations.DefaultSchema, store.Schema(), legacySchema, store.Schema())
}
