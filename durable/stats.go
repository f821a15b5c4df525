package durable

import "context"

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
