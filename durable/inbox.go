package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/runtime/driver"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// InsertNotification stores a notification in the inbox, idempotently on
// its correlation key, and wakes the runbook that waits for it, with
// pg_notify, in one transaction.
//
// A notification can arrive before its step has parked. Both this and the
// park (InsertInvocation) take the correlation key's advisory lock, so one
// of them commits first and the other sees it: either the park finds the
// notification in the inbox and consumes it, or this finds the active
// invocation and wakes its runbook. A notification for an invocation that
// is no longer active (cancelled, timed out, finished) is kept and marked
// ignored.
//
// The locks are taken in the order an advance takes them, the runbook's
// before the correlation key's; see insertNotification.
func (s *Store) InsertNotification(ctx context.Context, n driver.Notification) (rbtype.InboxResult, error) {
	res, _, err := s.InsertNotificationResuming(ctx, n, nil)
	return res, err
}

// InsertNotificationResuming is InsertNotification that may resume the
// waiting runbook in the same transaction (issue 15: a resume in one
// transaction instead of three). When the notification is accepted for an
// active wait, resume is handed the transaction, which holds the runbook's
// lock, inside a savepoint: it advances the runbook there. If it fails,
// the savepoint is rolled back and the runbook is woken as
// InsertNotification would, so a resume that cannot be written never
// costs the notification. resumed says whether resume's work committed.
// resume may run more than once when the transaction is tried again; only
// its last run can have committed.
func (s *Store) InsertNotificationResuming(ctx context.Context, n driver.Notification, resume func(driver.Tx, uuid.UUID) error) (result rbtype.InboxResult, resumed bool, err error) {
	for tries := 1; ; tries++ {
		result, resumed, err = s.insertNotification(ctx, n, resume)
		if errors.Is(err, errParkedMeanwhile) && tries < 3 {
			continue
		}
		return result, resumed && err == nil, err
	}
}

// errParkedMeanwhile: the step parked between insertNotification's look at
// the invocation and its correlation lock, and its runbook is locked by
// another transaction. Waiting for that lock while holding the correlation
// key's could deadlock with an advance, so the transaction starts again;
// it then finds the invocation first and locks in order. After a few
// tries it is transient: the sender retries (the API answers 503).
var errParkedMeanwhile = fmt.Errorf("%w: the step parked meanwhile; retry in lock order", driver.ErrTransient)

func (s *Store) insertNotification(ctx context.Context, n driver.Notification, resume func(driver.Tx, uuid.UUID) error) (rbtype.InboxResult, bool, error) {
	result, resumed := rbtype.InboxAccepted, false
	err := s.inTx(ctx, func(t *Tx) error {
		result, resumed = rbtype.InboxAccepted, false
		// An advance locks its runbook, then the correlation keys of the
		// parks it writes. Taking the correlation key's lock first and the
		// runbook's second would deadlock with one, so the runbook is
		// found first (an invocation's runbook never changes) and locked
		// before the key.
		var locked uuid.UUID
		err := t.tx.QueryRow(ctx, `SELECT runbook_id FROM invocation_records WHERE correlation_key = $1`,
			n.CorrelationKey).Scan(&locked)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return translate(err)
		default:
			if err := t.LockRunbooks(ctx, []uuid.UUID{locked}); err != nil {
				return err
			}
			if n.Tenant != "" {
				// A tenant's secret resolves only its tenant's waits;
				// checked under the runbook's lock, so a wait found here
				// is the one the notification would end.
				var tenant string
				if err := t.tx.QueryRow(ctx, `SELECT tenant FROM runbooks WHERE id = $1`, locked).Scan(&tenant); err != nil {
					return translate(err)
				}
				if tenant != n.Tenant {
					return fmt.Errorf("%w: the wait belongs to another tenant", driver.ErrNotFound)
				}
			}
		}
		if err := t.lockKeys(ctx, []int64{correlationLockKey(n.CorrelationKey)}); err != nil {
			return err
		}
		var id int64
		err = t.tx.QueryRow(ctx, `
			INSERT INTO completion_notifications (correlation_key, payload_hash, outcome, result, error_code, error_message, tenant,
				traceparent, usage)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (correlation_key) DO NOTHING
			RETURNING id`,
			n.CorrelationKey, n.PayloadHash, n.Outcome, nullJSON(n.Result), nullString(n.ErrorCode), nullString(n.ErrorMessage),
			nullString(n.Tenant), nullString(n.TraceParent), usageJSON(n.Usage)).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			var hash string
			if err := t.tx.QueryRow(ctx, `SELECT payload_hash FROM completion_notifications WHERE correlation_key = $1`,
				n.CorrelationKey).Scan(&hash); err != nil {
				return translate(err)
			}
			if hash == n.PayloadHash {
				result = rbtype.InboxDuplicate
			} else {
				result = rbtype.InboxConflict
			}
			return nil
		}
		if err != nil {
			return translate(err)
		}
		var runbookID uuid.UUID
		var status rbtype.InvocationStatus
		err = t.tx.QueryRow(ctx, `SELECT runbook_id, status FROM invocation_records WHERE correlation_key = $1`,
			n.CorrelationKey).Scan(&runbookID, &status)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil // not parked yet: the park will consume it
		case err != nil:
			return translate(err)
		case status != rbtype.InvocationActive:
			return t.markNotifications(ctx, []int64{id}, rbtype.NotificationIgnored)
		}
		if runbookID != locked {
			// Parked since the first look: its advance has committed,
			// but another may hold the runbook now.
			ok, err := t.TryLockRunbook(ctx, runbookID)
			if err != nil {
				return err
			}
			if !ok {
				return errParkedMeanwhile
			}
		}
		if resume != nil && t.resumeInPlace(ctx, runbookID, resume) {
			resumed = true
			return nil
		}
		return t.Wake(ctx, []uuid.UUID{runbookID})
	})
	return result, resumed, err
}

// resumeInPlace runs resume for a runbook this transaction holds the lock
// of, in a savepoint, and says whether it took: on an error the savepoint
// is rolled back and the caller wakes the runbook instead.
func (t *Tx) resumeInPlace(ctx context.Context, runbookID uuid.UUID, resume func(driver.Tx, uuid.UUID) error) bool {
	sp, err := t.tx.Begin(ctx)
	if err != nil {
		return false
	}
	// The savepoint sees the locks its transaction holds; a lock it takes
	// itself is forgotten with it, as a rollback to it may release it.
	if err := resume(&Tx{tx: sp, store: t.store, held: maps.Clone(t.held)}, runbookID); err != nil {
		_ = sp.Rollback(ctx)
		return false
	}
	return sp.Commit(ctx) == nil
}

const notificationColumns = `id, correlation_key, payload_hash, outcome, result, coalesce(error_code, ''),
	coalesce(error_message, ''), status, received_at, processed_at, coalesce(tenant, ''), coalesce(traceparent, ''), usage`

func scanNotification(r pgx.CollectableRow) (driver.Notification, error) {
	var n driver.Notification
	var usage []byte
	err := r.Scan(&n.ID, &n.CorrelationKey, &n.PayloadHash, &n.Outcome, &n.Result, &n.ErrorCode, &n.ErrorMessage,
		&n.Status, &n.ReceivedAt, &n.ProcessedAt, &n.Tenant, &n.TraceParent, &usage)
	if err == nil && len(usage) > 0 {
		err = json.Unmarshal(usage, &n.Usage)
	}
	return n, err
}

// usageJSON is a notification's usage as stored: NULL when it reports
// none.
func usageJSON(u driver.Usage) *string {
	if u == (driver.Usage{}) {
		return nil
	}
	b, _ := json.Marshal(u) // numbers and a string: it cannot fail
	s := string(b)
	return &s
}

const markNotificationsSQL = `
	UPDATE completion_notifications SET status = $2, processed_at = now()
	WHERE id = ANY($1) AND status = 'received'`

// notificationsForRunbooksSQL locks the unprocessed notifications of the
// runbooks' active invocations.
const notificationsForRunbooksSQL = `SELECT ` + notificationColumns + `
	FROM completion_notifications
	WHERE status = 'received' AND correlation_key IN (
		SELECT correlation_key FROM invocation_records WHERE status = 'active' AND runbook_id = ANY($1))
	ORDER BY id
	FOR UPDATE`

// markNotifications records that notifications were processed or ignored.
func (t *Tx) markNotifications(ctx context.Context, ids []int64, status rbtype.NotificationStatus) error {
	_, err := t.tx.Exec(ctx, markNotificationsSQL, ids, string(status))
	return translate(err)
}

// Notification loads one notification by correlation key.
func (s *Store) Notification(ctx context.Context, correlationKey string) (driver.Notification, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+notificationColumns+` FROM completion_notifications WHERE correlation_key = $1`, correlationKey)
	if err != nil {
		return driver.Notification{}, translate(err)
	}
	n, err := pgx.CollectOneRow(rows, scanNotification)
	return n, translate(err)
}

// Gauges counts the parked steps (active invocations) and the
// notifications not yet processed, for the metrics.
func (s *Store) Gauges(ctx context.Context) (parked, inbox int64, err error) {
	if parked, err = s.ParkedCount(ctx); err != nil {
		return 0, 0, err
	}
	inbox, err = s.InboxDepth(ctx)
	return parked, inbox, err
}

// InboxDepth counts the notifications not yet processed.
func (s *Store) InboxDepth(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM completion_notifications WHERE status = 'received'`).Scan(&n)
	return n, translate(err)
}

// ParkedCount counts the active invocations.
func (s *Store) ParkedCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM invocation_records WHERE status = 'active'`).Scan(&n)
	return n, translate(err)
}

// OldestUnprocessed is when the oldest unprocessed notification arrived,
// nil when there is none.
func (s *Store) OldestUnprocessed(ctx context.Context) (*time.Time, error) {
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT min(received_at) FROM completion_notifications WHERE status = 'received'`).Scan(&at)
	return at, translate(err)
}
