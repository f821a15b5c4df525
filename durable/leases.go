package durable

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/runtime/driver"
)

const acquireLeasesSQL = `
	INSERT INTO step_leases AS l (step_id, runbook_id, worker_id, attempt, status, acquired_at, expires_at)
	SELECT s, r, $1, a, 'active', now(), $2
	FROM unnest($3::bigint[], $4::uuid[], $5::int[]) AS u(s, r, a)
	ON CONFLICT (step_id) DO UPDATE SET
		worker_id = excluded.worker_id, attempt = excluded.attempt, status = 'active',
		acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
	WHERE l.status <> 'active'
	RETURNING step_id`

func acquireLeaseArgs(worker string, expiresAt time.Time, reqs []driver.LeaseRequest) []any {
	steps := make([]int64, len(reqs))
	runbooks := make([]uuid.UUID, len(reqs))
	attempts := make([]int32, len(reqs))
	for i, r := range reqs {
		steps[i], runbooks[i], attempts[i] = r.StepID, r.RunbookID, int32(r.Attempt)
	}
	return []any{worker, expiresAt, steps, runbooks, attempts}
}

// RenewLeases extends the worker's active leases on steps, returning the
// ids it still held. A lease that was reclaimed is not renewed: its worker
// must not record an outcome for it.
func (s *Store) RenewLeases(ctx context.Context, worker string, expiresAt time.Time, stepIDs []int64) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE step_leases SET expires_at = $2
		WHERE step_id = ANY($3) AND worker_id = $1 AND status = 'active'
		RETURNING step_id`, worker, expiresAt, stepIDs)
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
	return scanHeld(rows)
}

const releaseLeasesSQL = `
	UPDATE step_leases SET status = 'released'
	WHERE step_id = ANY($2) AND worker_id = $1 AND status = 'active'
	RETURNING step_id, attempt`

// releaseAttemptLeasesSQL releases the worker's leases on steps for the
// attempts given, and only those: when a call's outcome comes back after
// its lease expired and this same worker reclaimed the step as the next
// attempt, the next attempt's lease must stay, or the step would look
// abandoned and run a third time while the second still runs.
const releaseAttemptLeasesSQL = `
	UPDATE step_leases l SET status = 'released'
	FROM unnest($2::bigint[], $3::int[]) AS u(s, a)
	WHERE l.step_id = u.s AND l.attempt = u.a AND l.worker_id = $1 AND l.status = 'active'
	RETURNING l.step_id, l.attempt`

func releaseArgs(worker string, reqs []driver.LeaseRequest) []any {
	steps := make([]int64, len(reqs))
	attempts := make([]int32, len(reqs))
	for i, r := range reqs {
		steps[i], attempts[i] = r.StepID, int32(r.Attempt)
	}
	return []any{worker, steps, attempts}
}

func scanHeld(rows pgx.Rows) (map[int64]int, error) {
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

const reclaimLeasesSQL = `
	UPDATE step_leases SET status = 'reclaimed'
	WHERE status = 'active' AND expires_at < $1 AND ($2::uuid[] IS NULL OR runbook_id = ANY($2))
	RETURNING step_id, runbook_id, worker_id, attempt, status, acquired_at, expires_at`

const activeLeasesSQL = `
	SELECT step_id, runbook_id, worker_id, attempt, status, acquired_at, expires_at
	FROM step_leases WHERE status = 'active' AND runbook_id = ANY($1)`

// WorkerLeases returns a worker's active leases; a stopping worker releases
// what is left.
func (s *Store) WorkerLeases(ctx context.Context, worker string) ([]driver.Lease, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT step_id, runbook_id, worker_id, attempt, status, acquired_at, expires_at
		FROM step_leases WHERE status = 'active' AND worker_id = $1`, worker)
	if err != nil {
		return nil, translate(err)
	}
	leases, err := pgx.CollectRows(rows, scanLease)
	return leases, translate(err)
}

func scanLease(r pgx.CollectableRow) (driver.Lease, error) {
	var l driver.Lease
	err := r.Scan(&l.StepID, &l.RunbookID, &l.WorkerID, &l.Attempt, &l.Status, &l.AcquiredAt, &l.ExpiresAt)
	return l, err
}
