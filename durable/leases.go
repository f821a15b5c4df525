package durable

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

// A step's lease is four columns of its row (migration 008): the worker,
// the attempt, when it was taken and when it expires. An advance takes and
// ends leases with the step's own update (updateStepsSQL, LoadForAdvance);
// what is here works on leases outside an advance.

// RenewLeases extends the worker's active leases on steps, returning the
// ids it still held. A lease that was reclaimed is not renewed: its worker
// must not record an outcome for it.
func (s *Store) RenewLeases(ctx context.Context, worker string, expiresAt time.Time, stepIDs []int64) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE runbook_steps SET lease_expires_at = $2
		WHERE id = ANY($3) AND lease_worker = $1
		RETURNING id`, worker, expiresAt, stepIDs)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, translate(err)
}

// ReleaseLeases ends the worker's active leases on steps, returning the ids
// it still held, with the attempt each was for. An outcome is recorded only
// for the steps returned.
func (t *Tx) ReleaseLeases(ctx context.Context, worker string, stepIDs []int64) (map[int64]int, error) {
	rows, err := t.tx.Query(ctx, releaseLeasesSQL, worker, stepIDs)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	held := map[int64]int{}
	for rows.Next() {
		var id int64
		var attempt int
		if err := rows.Scan(&id, &attempt); err != nil {
			return nil, translate(err)
		}
		held[id] = attempt
	}
	return held, translate(rows.Err())
}

// releaseLeasesSQL returns the attempt each lease was for from the row as
// it was before the update.
const releaseLeasesSQL = `
	UPDATE runbook_steps s
	SET lease_worker = NULL, lease_attempt = NULL, lease_acquired_at = NULL, lease_expires_at = NULL
	FROM runbook_steps old
	WHERE s.id = ANY($2) AND s.lease_worker = $1 AND old.id = s.id
	RETURNING s.id, old.lease_attempt`

// WorkerLeases returns a worker's active leases; a stopping worker releases
// what is left. No index on the lease serves it (one would make every step
// update write it). The runbooks' wake-ups do: a runbook with a lease out
// is always due again no later than the lease expires (the advance's
// boundByLeases), so its wake_at is set, and the steps of the runbooks due
// at all are few beside the history. A lease this misses (were that ever
// not so) expires and is reclaimed as a dead worker's is. The look-up goes
// from each wake-up to its runbook's steps (OFFSET 0 keeps PostgreSQL from
// flattening it): steps with a lease are so rare that PostgreSQL, left to
// itself, read the whole steps table for them instead.
func (s *Store) WorkerLeases(ctx context.Context, worker string) ([]driver.Lease, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.* FROM runbook_wakeups w, LATERAL (
			SELECT id, runbook_id, lease_worker, lease_attempt, 'active', lease_acquired_at, lease_expires_at
			FROM runbook_steps WHERE runbook_id = w.runbook_id AND lease_worker = $1
			OFFSET 0) s`, worker)
	if err != nil {
		return nil, translate(err)
	}
	leases, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Lease, error) {
		var l driver.Lease
		err := r.Scan(&l.StepID, &l.RunbookID, &l.WorkerID, &l.Attempt, &l.Status, &l.AcquiredAt, &l.ExpiresAt)
		return l, err
	})
	return leases, translate(err)
}
