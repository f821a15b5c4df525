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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
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
	res, _, err := s.InsertNotificationResuming(ctx, n, nil, nil)
	return res, err
}

// InsertNotificationResuming is InsertNotification that first hands the
// wait the key ends, if a step has parked with it, to check, with the
// transaction (before any lock is taken: check only reads), which may
// refuse the notification (nothing is stored), and may then resume the
// waiting runbook in the same transaction (issue 15: a resume in one
// transaction instead of three). When the notification is accepted for an
// active wait, resume is handed the transaction, which holds the runbook's
// lock, inside a savepoint: it advances the runbook there. If it fails,
// the savepoint is rolled back and the runbook is woken as
// InsertNotification would, so a resume that cannot be written never
// costs the notification. resumed says whether resume's work committed.
// check and resume may run more than once when the transaction is tried
// again; only their last run counts. Either may be nil.
func (s *Store) InsertNotificationResuming(ctx context.Context, n driver.Notification, check func(driver.Tx, driver.WaitTarget) error, resume func(driver.Tx, uuid.UUID) error) (result rbtype.InboxResult, resumed bool, err error) {
	for tries := 1; ; tries++ {
		result, resumed, err = s.insertNotification(ctx, n, check, resume)
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

// waitTargetSQL finds the wait a correlation key ends, in one indexed
// look-up (the key is unique).
const waitTargetSQL = `
	SELECT i.runbook_id, r.tenant, r.plan_hash, st.key, st.verb, i.status
	FROM invocation_records i
	JOIN runbook_steps st ON st.id = i.step_id
	JOIN runbooks r ON r.id = i.runbook_id
	WHERE i.correlation_key = $1`

func scanWaitTarget(row pgx.Row) (driver.WaitTarget, error) {
	var w driver.WaitTarget
	err := row.Scan(&w.RunbookID, &w.Tenant, &w.PlanHash, &w.StepKey, &w.Verb, &w.Status)
	return w, translate(err)
}

// insertNotification is one try of InsertNotificationResuming. Before the
// resume, it costs three round trips besides BEGIN: the wait's look-up;
// then, pipelined, the runbook's lock, the key's lock, the insert, what
// the key held before, the savepoint and, for a resume, the runbook's
// state; then the resume's write.
func (s *Store) insertNotification(ctx context.Context, n driver.Notification, check func(driver.Tx, driver.WaitTarget) error, resume func(driver.Tx, uuid.UUID) error) (rbtype.InboxResult, bool, error) {
	result, resumed := rbtype.InboxAccepted, false
	err := s.inTx(ctx, func(t *Tx) error {
		result, resumed = rbtype.InboxAccepted, false
		// An advance locks its runbook, then the correlation keys of the
		// parks it writes. Taking the correlation key's lock first and the
		// runbook's second would deadlock with one, so the runbook is
		// found first (an invocation's runbook never changes) and locked
		// before the key.
		target, err := scanWaitTarget(t.tx.QueryRow(ctx, waitTargetSQL, n.CorrelationKey))
		var locked uuid.UUID
		switch {
		case errors.Is(err, driver.ErrNotFound):
		case err != nil:
			return err
		default:
			// A tenant's secret resolves only its tenant's waits. A
			// runbook's tenant, like an invocation's runbook, never
			// changes, so what this look-up found holds under the lock.
			if n.Tenant != "" && target.Tenant != n.Tenant {
				return fmt.Errorf("%w: the wait belongs to another tenant", driver.ErrNotFound)
			}
			if check != nil {
				if err := check(t, target); err != nil {
					return err
				}
			}
			locked = target.RunbookID
		}
		st, err := t.storeNotification(ctx, n, locked, resume != nil)
		if err != nil {
			return err
		}
		switch {
		case !st.inserted && st.hash == n.PayloadHash:
			result = rbtype.InboxDuplicate
			return nil
		case !st.inserted:
			result = rbtype.InboxConflict
			return nil
		case !st.parked:
			return nil // not parked yet: the park will consume it
		case st.status != rbtype.InvocationActive:
			return t.markNotifications(ctx, []int64{st.id}, rbtype.NotificationIgnored)
		}
		runbookID := st.runbookID
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

// storedNotification is what storeNotification found: whether the
// notification was inserted (with its id) or its key held another (with
// that one's payload hash), and the wait it ends, if a step parked.
type storedNotification struct {
	inserted  bool
	id        int64
	hash      string
	parked    bool
	runbookID uuid.UUID
	status    rbtype.InvocationStatus
}

const insertNotificationSQL = `
	INSERT INTO completion_notifications (correlation_key, payload_hash, outcome, result, error_code, error_message, tenant,
		traceparent, usage)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT (correlation_key) DO NOTHING
	RETURNING id`

// resumeSavepoint is where a resume in place rolls back to.
const resumeSavepoint = "resume_in_place"

// storeNotification takes the runbook's lock (when locked names the
// runbook the key's wait was found in) and the correlation key's, inserts
// the notification unless the key has one, and reads the key's payload
// hash and its wait, in one round trip. With savepoint, it also starts the
// savepoint a resume in place rolls back to, and reads the runbook's state
// for that resume (LoadForAdvance answers from it).
func (t *Tx) storeNotification(ctx context.Context, n driver.Notification, locked uuid.UUID, savepoint bool) (storedNotification, error) {
	var st storedNotification
	var b pgx.Batch
	ignore := func(pgconn.CommandTag) error { return nil }
	locks := []int64{correlationLockKey(n.CorrelationKey)}
	if locked != uuid.Nil {
		if runbookKey := RunbookLockKey(locked); !t.held[runbookKey] {
			b.Queue("SELECT pg_advisory_xact_lock($1)", runbookKey).Exec(ignore)
			locks = append(locks, runbookKey)
		}
	}
	b.Queue("SELECT pg_advisory_xact_lock($1)", locks[0]).Exec(ignore)
	b.Queue(insertNotificationSQL,
		n.CorrelationKey, n.PayloadHash, n.Outcome, nullJSON(n.Result), nullString(n.ErrorCode), nullString(n.ErrorMessage),
		nullString(n.Tenant), nullString(n.TraceParent), usageJSON(n.Usage)).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		if rows.Next() {
			st.inserted = true
			return rows.Scan(&st.id)
		}
		return rows.Err()
	})
	b.Queue(`SELECT payload_hash FROM completion_notifications WHERE correlation_key = $1`, n.CorrelationKey).
		QueryRow(func(row pgx.Row) error { return row.Scan(&st.hash) })
	b.Queue(`SELECT runbook_id, status FROM invocation_records WHERE correlation_key = $1`, n.CorrelationKey).
		Query(func(rows pgx.Rows) error {
			defer rows.Close()
			if rows.Next() {
				st.parked = true
				return rows.Scan(&st.runbookID, &st.status)
			}
			return rows.Err()
		})
	var preload *preloadedState
	if savepoint {
		b.Queue("SAVEPOINT " + resumeSavepoint).Exec(ignore)
		if locked != uuid.Nil {
			// Read after the insert, so the resume finds its notification;
			// wasted on a duplicate, a conflict or a wait that ended, all
			// of them rare and cheap to read.
			preload = &preloadedState{runbookID: locked, state: queueLoad(&b, []uuid.UUID{locked})}
		}
	}
	if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
		return st, translate(err)
	}
	t.markHeld(locks...)
	t.preloaded = preload
	return st, nil
}

// resumeInPlace runs resume for a runbook this transaction holds the lock
// of, after the savepoint storeNotification started, and says whether it
// took: on an error the transaction rolls back to the savepoint and the
// caller wakes the runbook instead. On success the savepoint is left for
// the commit to release: one round trip fewer.
func (t *Tx) resumeInPlace(ctx context.Context, runbookID uuid.UUID, resume func(driver.Tx, uuid.UUID) error) bool {
	// The resume sees the locks its transaction holds; a lock it takes
	// itself is forgotten with it, as the rollback to the savepoint
	// releases it.
	preloaded := t.preloaded
	t.preloaded = nil
	if err := resume(&Tx{tx: t.tx, store: t.store, held: maps.Clone(t.held), preloaded: preloaded}, runbookID); err != nil {
		_, _ = t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+resumeSavepoint)
		return false
	}
	return true
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
