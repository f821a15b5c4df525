package durable

import (
	"context"
	"time"
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
