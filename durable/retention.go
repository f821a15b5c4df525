package durable

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Orphan notifications are those received for a correlation key that no
// invocation has: kept, because a step may yet park with the key (keys are
// derived, so a sender can be first), but not forever, or anyone who can
// sign a webhook could fill the inbox with keys that belong to nothing.
const (
	// pruneOrphansQuery deletes, oldest first, orphans received before
	// the cutoff. The partial index of unprocessed notifications finds
	// them by age; the unique index of invocation keys rules out owners.
	pruneOrphansQuery = `
		DELETE FROM completion_notifications
		WHERE id IN (
			SELECT n.id FROM completion_notifications n
			WHERE n.status = 'received' AND n.received_at < $1
			  AND NOT EXISTS (SELECT 1 FROM invocation_records i WHERE i.correlation_key = n.correlation_key)
			ORDER BY n.received_at
			LIMIT $2)`

	// countOrphansQuery counts the orphans waiting, for the metric.
	countOrphansQuery = `
		SELECT count(*) FROM completion_notifications n
		WHERE n.status = 'received'
		  AND NOT EXISTS (SELECT 1 FROM invocation_records i WHERE i.correlation_key = n.correlation_key)`
)

// PruneOrphanNotifications deletes up to limit notifications received
// before receivedBefore for keys no invocation has, and counts the orphans
// left.
func (s *Store) PruneOrphanNotifications(ctx context.Context, receivedBefore time.Time, limit int) (pruned, left int64, err error) {
	tag, err := s.pool.Exec(ctx, pruneOrphansQuery, receivedBefore, limit)
	if err != nil {
		return 0, 0, translate(err)
	}
	if err := s.pool.QueryRow(ctx, countOrphansQuery).Scan(&left); err != nil {
		return tag.RowsAffected(), 0, translate(err)
	}
	return tag.RowsAffected(), left, nil
}

// PruneFinished deletes up to limit runbooks that finished (with their
// compensations) before finishedBefore, oldest first, and everything they
// own: steps, edges, invocations and mutations go with them (ON DELETE
// CASCADE), events are deleted with them, and so are the notifications of
// their invocations,
// which nothing references. Action receipts stay: a receipt of the global
// scope is what keeps another runbook from repeating the side effect.
// Each batch takes the runbooks' locks, so no advance sees one half gone.
// It returns how many it deleted; call it again until that is 0.
func (s *Store) PruneFinished(ctx context.Context, finishedBefore time.Time, limit int) (int64, error) {
	var pruned int64
	err := s.inTx(ctx, func(tx *Tx) error {
		rows, err := tx.tx.Query(ctx, `
			SELECT id FROM runbooks
			WHERE finished_at < $1 AND status <> 'executing'
			ORDER BY finished_at, id
			LIMIT $2`, finishedBefore, limit)
		if err != nil {
			return translate(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil || len(ids) == 0 {
			return translate(err)
		}
		if err := tx.LockRunbooks(ctx, ids); err != nil {
			return err
		}
		if _, err := tx.tx.Exec(ctx, `
			DELETE FROM completion_notifications n
			USING invocation_records i
			WHERE i.correlation_key = n.correlation_key AND i.runbook_id = ANY($1)`, ids); err != nil {
			return translate(err)
		}
		// Events check no foreign key (migration 008): they go first, by
		// hand, with the runbooks still there to be sure of.
		if _, err := tx.tx.Exec(ctx, `
			DELETE FROM runbook_events e USING runbooks r
			WHERE e.runbook_id = r.id AND r.id = ANY($1) AND r.finished_at IS NOT NULL`, ids); err != nil {
			return translate(err)
		}
		tag, err := tx.tx.Exec(ctx, `DELETE FROM runbooks WHERE id = ANY($1) AND finished_at IS NOT NULL`, ids)
		if err != nil {
			return translate(err)
		}
		pruned = tag.RowsAffected()
		return nil
	})
	return pruned, err
}
