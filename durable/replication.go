package durable

import (
	"context"
	"fmt"
	"strings"

	"github.com/runbookdev/runbook/driver"
)

// Replication is what the primary says about its standbys and about how
// its commits wait for them: rbd's acknowledgements (a 202 for a
// notification, a 201 for a submission) survive the loss of the primary
// only when its commits wait for a standby (docs/scaling.md, "Durable
// acknowledgements").
type Replication struct {
	// Standbys counts the standbys streaming from this server now
	// (pg_stat_replication); SyncStandbys those of them the server
	// waits for (sync_state sync or quorum), which only a role with
	// pg_monitor can see: it is -1 when hidden.
	Standbys, SyncStandbys int
	// SynchronousStandbyNames and SynchronousCommit are the settings as
	// this session has them: a commit waits for a standby only when the
	// first names one and the second is on or remote_apply.
	SynchronousStandbyNames string
	SynchronousCommit       string
}

// Synchronous reports whether a commit of this session returns only once
// a standby has it, as docs/scaling.md requires of a primary with
// standbys: synchronous_standby_names names a standby, and
// synchronous_commit is on or remote_apply. remote_write is not enough
// (the standby has the commit in its memory only), nor local or off.
func (r Replication) Synchronous() bool {
	if strings.TrimSpace(r.SynchronousStandbyNames) == "" {
		return false
	}
	switch r.SynchronousCommit {
	case "on", "remote_apply":
		return true
	}
	return false
}

// AsyncReplicationError says that the primary has standbys its commits do
// not wait for: a failover to one of them could lose what rbd answered
// 202 or 201 for.
type AsyncReplicationError struct{ Replication }

func (e *AsyncReplicationError) Error() string {
	names := e.SynchronousStandbyNames
	if strings.TrimSpace(names) == "" {
		names = "empty"
	} else {
		names = fmt.Sprintf("%q", names)
	}
	return fmt.Sprintf("the database primary has %d standby(s) but its commits do not wait for one "+
		"(synchronous_standby_names is %s, synchronous_commit is %s): a failover could lose notifications and submissions "+
		"rbd has acknowledged. Make a standby synchronous (synchronous_standby_names, with synchronous_commit on or remote_apply; "+
		"Patroni: synchronous_mode: true), or start rbd with --allow-async-replication to accept the risk",
		e.Standbys, names, e.SynchronousCommit)
}

// Replication reads the primary's replication settings and standbys.
func (s *Store) Replication(ctx context.Context) (Replication, error) {
	var r Replication
	var sync *int
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_stat_replication)::int,
		(SELECT count(*) FILTER (WHERE sync_state IN ('sync', 'quorum'))::int
		   FROM pg_stat_replication HAVING count(sync_state) = count(*)),
		current_setting('synchronous_standby_names'),
		current_setting('synchronous_commit')`).Scan(&r.Standbys, &sync, &r.SynchronousStandbyNames, &r.SynchronousCommit)
	if err != nil {
		return r, fmt.Errorf("error reading the database's replication: %w", translate(err))
	}
	r.SyncStandbys = -1
	if sync != nil {
		r.SyncStandbys = *sync
	}
	return r, nil
}

// CheckReplication returns an *AsyncReplicationError when the primary has
// standbys and its commits do not wait for one, and nil otherwise (no
// standby, or a synchronous one).
func (s *Store) CheckReplication(ctx context.Context) (Replication, error) {
	r, err := s.Replication(ctx)
	if err != nil {
		return r, err
	}
	if r.Standbys > 0 && !r.Synchronous() {
		return r, &AsyncReplicationError{r}
	}
	return r, nil
}

// ErrNoPrimary is the store's answer while the server it reaches is a
// standby: during a failover, with a URL that does not ask for a
// read-write server (target_session_attrs=read-write), or one that names
// only standbys. It is transient: a failover ends.
var ErrNoPrimary = fmt.Errorf("%w: the database is a standby in recovery, not a primary", driver.ErrTransient)

// CheckPrimary reports whether the store reaches a primary that accepts
// writes: nil, ErrNoPrimary, or the error that kept it from asking (no
// server answers, which during a failover is the usual one).
func (s *Store) CheckPrimary(ctx context.Context) error {
	var inRecovery bool
	if err := s.pool.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil {
		return translate(err)
	}
	if inRecovery {
		return ErrNoPrimary
	}
	return nil
}
