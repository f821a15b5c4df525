package durable

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/migrations"
)

// migrationLockKey serializes schema creation across processes; tern
// takes its own lock for the migrations themselves.
var migrationLockKey = lockKey([]byte("rbd:migrate"))

// MigrationStatus is where a database stands.
type MigrationStatus struct {
	Current int32 // the version the database is at
	Latest  int32 // the version this binary brings
}

// Migrate brings the store's schema to the latest version. Each migration
// runs in its own transaction; several processes may call Migrate at once
// (an advisory lock makes them take turns); a database newer than this
// binary is refused with driver.ErrSchemaTooNew.
func (s *Store) Migrate(ctx context.Context) (MigrationStatus, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return MigrationStatus{}, translate(err)
	}
	defer conn.Release()
	if err := ensureSchema(ctx, conn.Conn(), s.config.Schema); err != nil {
		return MigrationStatus{}, err
	}
	m, err := s.migrator(ctx, conn.Conn())
	if err != nil {
		return MigrationStatus{}, err
	}
	status, err := migrationStatus(ctx, m)
	if err != nil {
		return status, err
	}
	if err := m.Migrate(ctx); err != nil {
		var bad migrate.BadVersionError
		if errors.As(err, &bad) {
			// Another process migrated further between our check and here.
			return status, fmt.Errorf("%w: %v", driver.ErrSchemaTooNew, err)
		}
		return status, fmt.Errorf("error migrating: %w", translate(err))
	}
	status.Current = status.Latest
	return status, nil
}

// MigrateTo brings the store's schema to version and no further, as an
// older rbd would have left it: for the tests of what a later migration
// does to the rows an earlier one wrote.
func (s *Store) MigrateTo(ctx context.Context, version int32) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return translate(err)
	}
	defer conn.Release()
	if err := ensureSchema(ctx, conn.Conn(), s.config.Schema); err != nil {
		return err
	}
	m, err := s.migrator(ctx, conn.Conn())
	if err != nil {
		return err
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		return fmt.Errorf("error migrating to version %d: %w", version, translate(err))
	}
	return nil
}

// MigrationVersion is the version the migration file named
// NNN_<name>.sql brings a schema to.
func MigrationVersion(name string) (int32, error) {
	files, err := migrate.FindMigrations(migrations.FS)
	if err != nil {
		return 0, err
	}
	for i, f := range files {
		if strings.HasSuffix(strings.TrimSuffix(path.Base(f), ".sql"), "_"+name) {
			return int32(i + 1), nil
		}
	}
	return 0, fmt.Errorf("no migration is named %q", name)
}

// MigrationStatus reports the database's version without changing it.
func (s *Store) MigrationStatus(ctx context.Context) (MigrationStatus, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return MigrationStatus{}, translate(err)
	}
	defer conn.Release()
	var exists bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2)`,
		s.config.Schema, migrations.VersionTable).Scan(&exists)
	if err != nil {
		return MigrationStatus{}, translate(err)
	}
	latest, err := latestMigration()
	if err != nil {
		return MigrationStatus{}, err
	}
	if !exists {
		return MigrationStatus{Latest: latest}, nil
	}
	var current int32
	err = conn.QueryRow(ctx, "SELECT version FROM "+pgx.Identifier{s.config.Schema, migrations.VersionTable}.Sanitize()).Scan(&current)
	return MigrationStatus{Current: current, Latest: latest}, translate(err)
}

func (s *Store) migrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	table := pgx.Identifier{s.config.Schema, migrations.VersionTable}.Sanitize()
	m, err := migrate.NewMigrator(ctx, conn, table)
	if err != nil {
		return nil, fmt.Errorf("error preparing migrations: %w", translate(err))
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return nil, fmt.Errorf("error loading migrations: %w", err)
	}
	return m, nil
}

func migrationStatus(ctx context.Context, m *migrate.Migrator) (MigrationStatus, error) {
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return MigrationStatus{}, translate(err)
	}
	status := MigrationStatus{Current: current, Latest: int32(len(m.Migrations))}
	if current > status.Latest {
		return status, fmt.Errorf("%w: the database is at version %d and this rbd knows versions up to %d; upgrade rbd",
			driver.ErrSchemaTooNew, current, status.Latest)
	}
	return status, nil
}

func latestMigration() (int32, error) {
	names, err := migrate.FindMigrations(migrations.FS)
	return int32(len(names)), err
}

// LatestSchemaVersion is the schema version this binary migrates to.
func LatestSchemaVersion() (int32, error) { return latestMigration() }

// ensureSchema creates the schema if it is missing. Concurrent CREATE
// SCHEMA IF NOT EXISTS can still collide in the catalog, so it runs under a
// session advisory lock. An existing schema is left alone: rbd's role may
// own its schema without the right to create schemas, which CREATE SCHEMA
// IF NOT EXISTS demands even when there is nothing to create.
func ensureSchema(ctx context.Context, conn *pgx.Conn, schema string) error {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return translate(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockKey) //nolint:errcheck // released with the session at worst
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil || exists {
		return translate(err)
	}
	_, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	return translate(err)
}
