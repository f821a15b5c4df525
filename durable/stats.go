package durable

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DatabaseStats are PostgreSQL's cumulative counters for the database:
// what the work cost it. Compare two readings; the server updates them at
// most about once a second per connection, so wait that long after the
// work before the second.
type DatabaseStats struct {
	Commits      int64 // transactions committed
	Rollbacks    int64 // transactions rolled back
	RowsInserted int64
	RowsUpdated  int64
	RowsDeleted  int64
	// WALBytes is the write-ahead log position: the bytes written to it
	// since the cluster began.
	WALBytes int64
}

// Sub returns the difference between two readings.
func (a DatabaseStats) Sub(b DatabaseStats) DatabaseStats {
	return DatabaseStats{
		Commits: a.Commits - b.Commits, Rollbacks: a.Rollbacks - b.Rollbacks,
		RowsInserted: a.RowsInserted - b.RowsInserted, RowsUpdated: a.RowsUpdated - b.RowsUpdated,
		RowsDeleted: a.RowsDeleted - b.RowsDeleted, WALBytes: a.WALBytes - b.WALBytes,
	}
}

// DatabaseStats reads the counters of the database the store is in.
func (s *Store) DatabaseStats(ctx context.Context) (DatabaseStats, error) {
	var d DatabaseStats
	err := s.pool.QueryRow(ctx, `
		SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted,
			(pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint
		FROM pg_stat_database WHERE datname = current_database()`).
		Scan(&d.Commits, &d.Rollbacks, &d.RowsInserted, &d.RowsUpdated, &d.RowsDeleted, &d.WALBytes)
	return d, translate(err)
}

// BackendPIDs lists the process ids of the server's backends serving
// connections whose application_name is application: a load generator on
// the server's own machine reads their CPU time from /proc, which says
// what a workload costs the database, not only the client.
func (s *Store) BackendPIDs(ctx context.Context, application string) ([]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, application)
	if err != nil {
		return nil, translate(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	out := make([]int, len(pids))
	for i, p := range pids {
		out[i] = int(p)
	}
	return out, translate(err)
}

// SchemaTables lists the tables of a schema, each quoted and qualified
// with the schema's name, sorted: what a load generator vacuums or
// analyzes after filling the schema, without touching any other.
func (s *Store) SchemaTables(ctx context.Context, schema string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT format('%I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, schema)
	if err != nil {
		return nil, translate(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return tables, translate(err)
}

// AnalyzeSchema gathers the planner's statistics for every table of a
// schema, as autovacuum does a minute or so after a table changes: a load
// generator that fills a fresh schema and measures it at once would
// otherwise measure plans made without any (every estimate a default).
func (s *Store) AnalyzeSchema(ctx context.Context, schema string) error {
	tables, err := s.SchemaTables(ctx, schema)
	if err != nil || len(tables) == 0 {
		return err
	}
	_, err = s.pool.Exec(ctx, "ANALYZE "+strings.Join(tables, ", "))
	return translate(err)
}

// DataDirectory is the server's data directory, where its postmaster.pid
// is: a load generator on the server's machine reads the postmaster's CPU
// time, its exited backends' included, from /proc. It needs a role that
// may read the setting (a superuser, or pg_read_all_settings).
func (s *Store) DataDirectory(ctx context.Context) (string, error) {
	var dir string
	err := s.pool.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&dir)
	return dir, translate(err)
}

// TableWrites are PostgreSQL's cumulative counts of the rows written to
// one table: what a workload writes where (pg_stat_user_tables).
type TableWrites struct {
	Inserted, Updated, Deleted int64
}

// TableWrites reads the counts of rows written to each table of the
// store's schema, by table name. The server updates them when a backend
// goes idle for a second or exits: read them after the writers' pool is
// closed.
func (s *Store) TableWrites(ctx context.Context) (map[string]TableWrites, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables
		WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]TableWrites{}
	for rows.Next() {
		var name string
		var w TableWrites
		if err := rows.Scan(&name, &w.Inserted, &w.Updated, &w.Deleted); err != nil {
			return nil, translate(err)
		}
		out[name] = w
	}
	return out, translate(rows.Err())
}
