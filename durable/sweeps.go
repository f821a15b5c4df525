package durable

import (
	"context"
	"time"

	"github.com/runbookdev/runbook/driver"
)

// The sweeps are the safety net under wake-ups: whatever a lost NOTIFY or
// a crash left behind, they find by scanning a partial index and make the
// runbook due again. (Expired leases need no sweep: a runbook with a call
// out keeps a wake-up no later than its leases expire; see migration 008.)
// Each query is a constant so that a test can EXPLAIN it; each sets the
// wake-ups of the runbooks it found to now, unless they are due already.
const (
	// sweepInboxQuery wakes runbooks whose active invocations have a
	// notification waiting that they may consume: of their tenant, or of
	// none (another tenant's, for the same key, never will be).
	sweepInboxQuery = `
		INSERT INTO runbook_wakeups (runbook_id, wake_at)
		SELECT DISTINCT runbook_id, now() FROM (
			SELECT i.runbook_id
			FROM completion_notifications n
			JOIN invocation_records i ON i.correlation_key = n.correlation_key
			WHERE n.status = 'received' AND i.status = 'active'
			  AND (n.tenant IS NULL OR n.tenant = (SELECT o.tenant FROM runbooks o WHERE o.id = i.runbook_id))
			LIMIT $1) found
		ON CONFLICT (runbook_id) DO UPDATE SET wake_at = now() WHERE runbook_wakeups.wake_at > now()`

	// ignoreStaleQuery marks notifications for invocations that are no
	// longer active as ignored: kept, never acted on.
	ignoreStaleQuery = `
		UPDATE completion_notifications n SET status = 'ignored', processed_at = now()
		FROM invocation_records i
		WHERE n.status = 'received' AND i.correlation_key = n.correlation_key AND i.status <> 'active'`

	// sweepTimeoutsQuery wakes runbooks with an active invocation past its
	// timeout.
	sweepTimeoutsQuery = `
		INSERT INTO runbook_wakeups (runbook_id, wake_at)
		SELECT DISTINCT runbook_id, now() FROM (
			SELECT runbook_id FROM invocation_records
			WHERE status = 'active' AND timeout_at <= now()
			ORDER BY timeout_at
			LIMIT $1) found
		ON CONFLICT (runbook_id) DO UPDATE SET wake_at = now() WHERE runbook_wakeups.wake_at > now()`

	// sweepRetriesQuery wakes runbooks with a retry that is due.
	sweepRetriesQuery = `
		INSERT INTO runbook_wakeups (runbook_id, wake_at)
		SELECT DISTINCT runbook_id, now() FROM (
			SELECT runbook_id FROM runbook_steps
			WHERE next_attempt_at <= now() AND status = 'failed_retryable'
			ORDER BY next_attempt_at
			LIMIT $1) found
		ON CONFLICT (runbook_id) DO UPDATE SET wake_at = now() WHERE runbook_wakeups.wake_at > now()`
)

// Sweep runs every sweep once, waking at most limit runbooks for each.
func (s *Store) Sweep(ctx context.Context, limit int) (driver.SweepResult, error) {
	r := driver.SweepResult{Took: make(map[string]time.Duration, 4)}
	for _, q := range []struct {
		name string
		sql  string
		n    *int64
		args []any
	}{
		{"inbox", sweepInboxQuery, &r.Inbox, []any{limit}},
		{"ignore", ignoreStaleQuery, &r.Ignored, nil},
		{"timeouts", sweepTimeoutsQuery, &r.Timeouts, []any{limit}},
		{"retries", sweepRetriesQuery, &r.Retries, []any{limit}},
	} {
		start := time.Now()
		tag, err := s.pool.Exec(ctx, q.sql, q.args...)
		if err != nil {
			return r, translate(err)
		}
		r.Took[q.name] = time.Since(start)
		*q.n = tag.RowsAffected()
	}
	return r, nil
}
