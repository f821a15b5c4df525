package durable

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// A notification's arrival is composed by the runtime from the operations
// below, in one transaction:
//
//	target := tx.WaitTarget(key)              // which runbook, if a step parked
//	st := tx.StoreNotification(n, {Lock: target.RunbookID, ...})
//	// duplicate? conflict? not parked yet? a wait that ended (IgnoreNotifications)?
//	// else resume the runbook in place, or Wake it
//
// A notification can arrive before its step has parked. Both the insert
// and the park (WriteAdvance's new invocations) take the correlation
// key's advisory lock, so one of them commits first and the other sees
// it: either the park's advance finds the notification in the inbox and
// consumes it, or the insert finds the active invocation and wakes its
// runbook. The locks are taken in the order an advance takes them, the
// runbook's before the correlation key's: StoreOptions.Lock.

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

// WaitTarget says which step and runbook a correlation key's wait is for,
// inside the transaction; ErrNotFound when no step has parked with it.
func (t *Tx) WaitTarget(ctx context.Context, correlationKey string) (driver.WaitTarget, error) {
	return scanWaitTarget(t.tx.QueryRow(ctx, waitTargetSQL, correlationKey))
}

// storeNotificationSQL inserts a notification unless its key already
// holds one in the notification's namespace (its tenant's, or no
// tenant's: migration 019), and returns the new row's id, or else the
// payload hash the key holds, in one statement. The outer query's snapshot
// is the statement's, taken before the insert: it sees the row that
// conflicted, never the one inserted. That row is committed: every insert
// of the key holds the key's lock until its commit, and this statement runs
// under that lock (StoreNotification).
const storeNotificationSQL = `
	WITH inserted AS (
		INSERT INTO completion_notifications (correlation_key, payload_hash, outcome, result, error_code, error_message, tenant,
			traceparent, usage)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (correlation_key, (coalesce(tenant, ''))) DO NOTHING
		RETURNING id)
	SELECT (SELECT id FROM inserted),
		(SELECT payload_hash FROM completion_notifications
		 WHERE correlation_key = $1 AND coalesce(tenant, '') = coalesce($7, ''))`

// waitOfKeySQL finds the wait a notification of no tenant may end, a step
// of any tenant's runbooks; waitOfTenantKeySQL the wait one of tenant $2
// may end, a step of that tenant's runbooks. Another tenant's wait is not
// there for it. They are two statements, not one with an optional
// filter, so that each is planned once (a filter on whether a parameter is
// NULL had PostgreSQL plan it anew at every execution).
const (
	waitOfKeySQL       = `SELECT i.runbook_id, i.status FROM invocation_records i WHERE i.correlation_key = $1`
	waitOfTenantKeySQL = `
	SELECT i.runbook_id, i.status FROM invocation_records i
	JOIN runbooks r ON r.id = i.runbook_id AND r.tenant = $2
	WHERE i.correlation_key = $1`
)

// resumeSavepoint is where a resume in place rolls back to.
const resumeSavepoint = "resume_in_place"

// StoreNotification takes the lock of o.Lock's runbook (if set and not
// held) and the correlation key's, inserts the notification unless the key
// has one, and reads the key's payload hash and its wait, in one round
// trip. With o.Savepoint it then sets the savepoint RollbackToSavepoint
// returns to, and with o.Load it reads o.Lock's runbook state, after the
// insert so that the state holds the notification: a resume in place
// needs no load of its own.
func (t *Tx) StoreNotification(ctx context.Context, n driver.Notification, o driver.StoreOptions) (driver.StoredNotification, error) {
	var st driver.StoredNotification
	var b pgx.Batch
	ignore := func(pgconn.CommandTag) error { return nil }
	// The runbook's lock before the key's, as an advance takes them.
	var locks []int64
	if o.Lock != uuid.Nil {
		if runbookKey := RunbookLockKey(o.Lock); !t.held[runbookKey] {
			locks = append(locks, runbookKey)
		}
	}
	locks = append(locks, correlationLockKey(n.CorrelationKey))
	b.Queue(lockKeysSQL, locks).Exec(ignore)
	b.Queue(storeNotificationSQL,
		n.CorrelationKey, n.PayloadHash, n.Outcome, nullJSON(n.Result), nullString(n.ErrorCode), nullString(n.ErrorMessage),
		nullString(n.Tenant), nullString(n.TraceParent), usageJSON(n.Usage)).QueryRow(func(row pgx.Row) error {
		var id *int64
		var held *string
		if err := row.Scan(&id, &held); err != nil {
			return err
		}
		if id != nil {
			st.Inserted, st.ID, st.PayloadHash = true, *id, n.PayloadHash
		} else if held != nil {
			st.PayloadHash = *held
		}
		return nil
	})
	waitOf, args := waitOfKeySQL, []any{n.CorrelationKey}
	if n.Tenant != "" {
		waitOf, args = waitOfTenantKeySQL, []any{n.CorrelationKey, n.Tenant}
	}
	b.Queue(waitOf, args...).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		if rows.Next() {
			st.Parked = true
			return rows.Scan(&st.RunbookID, &st.WaitStatus)
		}
		return rows.Err()
	})
	if o.Savepoint {
		b.Queue("SAVEPOINT " + resumeSavepoint).Exec(ignore)
	}
	if o.Load && o.Lock != uuid.Nil {
		// Wasted on a duplicate, a conflict or a wait that ended, all of
		// them rare and cheap to read.
		st.State = queueLoad(&b, []uuid.UUID{o.Lock}, driver.LoadOptions{Day: o.Day, AllSpend: o.AllSpend})
	}
	if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
		return st, translate(err)
	}
	t.markHeld(locks...)
	if o.Savepoint {
		t.heldAtSavepoint = maps.Clone(t.held)
	}
	return st, nil
}

// RollbackToSavepoint undoes what the transaction did since
// StoreNotification's savepoint; the locks taken since are released with
// it.
func (t *Tx) RollbackToSavepoint(ctx context.Context) error {
	if _, err := t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+resumeSavepoint); err != nil {
		return translate(err)
	}
	t.held = maps.Clone(t.heldAtSavepoint)
	return nil
}

// IgnoreNotifications marks received notifications ignored.
func (t *Tx) IgnoreNotifications(ctx context.Context, ids []int64) error {
	return t.markNotifications(ctx, ids, rbtype.NotificationIgnored)
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
	if u.IsZero() {
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
// runbooks' active invocations: those of the runbook's tenant, and those
// of no tenant. Another tenant's, for the same key, are in a namespace of
// their own (migration 019) and resolve nothing here. An invocation's key
// is unique, so each notification joins one invocation. It is a plain
// join: written as a row-valued IN over a lateral list of the two
// namespaces, PostgreSQL spent more time planning it (0.93 ms, at every
// execution) than running it, on every advance.
const notificationsForRunbooksSQL = `SELECT ` + notificationColumnsOfN + `
	FROM invocation_records i
	JOIN runbooks r ON r.id = i.runbook_id
	JOIN completion_notifications n ON n.correlation_key = i.correlation_key
	WHERE i.status = 'active' AND i.runbook_id = ANY($1)
	  AND n.status = 'received' AND (coalesce(n.tenant, '') = '' OR n.tenant = r.tenant)
	ORDER BY n.id
	FOR UPDATE OF n`

// notificationColumnsOfN is notificationColumns of the table named n (a
// test holds the two alike).
const notificationColumnsOfN = `n.id, n.correlation_key, n.payload_hash, n.outcome, n.result, coalesce(n.error_code, ''),
	coalesce(n.error_message, ''), n.status, n.received_at, n.processed_at, coalesce(n.tenant, ''), coalesce(n.traceparent, ''), n.usage`

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
