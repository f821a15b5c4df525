package durable

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The advance of a batch of runbooks is the hot path: throughput depends on
// its round trips. LoadForAdvance and WriteAdvance each send their
// statements as one pipelined batch, so that an advance costs BEGIN, the
// locks, one load, one write and COMMIT, whatever the batch holds.

// liveStepsSQL reads the steps an advance can change or must look at: all
// but the plainly completed ones. A completed step can only matter as a
// predecessor (it is complete; its result is fetched by key when a
// dependent starts) or for compensation and dry runs (then it is read).
// A chain of n steps thus reads a step or two a transaction, not n.
var liveStepsSQL = "SELECT " + stepStateColumns + ` FROM runbook_steps
	WHERE runbook_id = ANY($1)
	  AND (status <> 'complete' OR simulated OR compensation_status IN ('pending', 'running'))
	ORDER BY runbook_id, position`

// AdvanceState is what an advance reads of its runbooks, under their
// locks.
type AdvanceState struct {
	Runbooks      []*Runbook // without plans
	Steps         []*Step    // the live steps (liveStepsSQL), in runbook and plan order
	Invocations   []Invocation
	Leases        []Lease        // active, unexpired
	Notifications []Notification // waiting for the active invocations, locked
	// Released maps the steps whose leases this worker released to the
	// attempt each lease was for.
	Released map[int64]int
}

// LoadForAdvance releases the worker's leases on the steps whose outcomes
// it brings, reclaims the runbooks' expired leases (exactly once, against
// any other worker), and reads their state.
func (t *Tx) LoadForAdvance(ctx context.Context, ids []uuid.UUID, worker string, release []int64, now time.Time) (*AdvanceState, error) {
	st := &AdvanceState{Released: map[int64]int{}}
	var b pgx.Batch
	if len(release) > 0 {
		b.Queue(releaseLeasesSQL, worker, release).Query(func(rows pgx.Rows) (err error) {
			st.Released, err = scanHeld(rows)
			return err
		})
	}
	b.Queue(reclaimLeasesSQL, now, ids).Exec(func(pgconn.CommandTag) error { return nil })
	b.Queue(runbookStatesSQL, ids).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			r, err := scanRunbook(rows)
			if err != nil {
				return err
			}
			st.Runbooks = append(st.Runbooks, r)
		}
		return rows.Err()
	})
	b.Queue(liveStepsSQL, ids).
		Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				s, err := scanStep(rows)
				if err != nil {
					return err
				}
				st.Steps = append(st.Steps, s)
			}
			return rows.Err()
		})
	b.Queue(activeInvocationsSQL, ids).Query(func(rows pgx.Rows) (err error) {
		st.Invocations, err = pgx.CollectRows(rows, scanInvocation)
		return err
	})
	b.Queue(activeLeasesSQL, ids).Query(func(rows pgx.Rows) (err error) {
		st.Leases, err = pgx.CollectRows(rows, scanLease)
		return err
	})
	b.Queue(notificationsForRunbooksSQL, ids).Query(func(rows pgx.Rows) (err error) {
		st.Notifications, err = pgx.CollectRows(rows, scanNotification)
		return err
	})
	if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, translate(err)
	}
	return st, nil
}

// AdvanceWrite is everything an advance changes.
type AdvanceWrite struct {
	NewInvocations    []Invocation
	InvocationUpdates []InvocationUpdate
	Finished          map[string][]uuid.UUID // final status → invocation ids
	Steps             []StepChange
	Worker            string
	LeaseUntil        time.Time
	Leases            []LeaseRequest
	Processed         []int64 // notifications consumed
	Receipts          []Receipt
	Events            []Event
	Runbooks          []RunbookChange
	// Compensate marks completed steps, by runbook and key, as waiting to
	// be undone.
	Compensate map[uuid.UUID][]string
}

// InvocationUpdate is what a park learned: see UpdateInvocation.
type InvocationUpdate struct {
	ID         uuid.UUID
	ExternalID string
	TimeoutAt  *time.Time
	Context    []byte
}

// WriteAdvance writes an advance's changes in one round trip and returns
// the ids of the steps it leased. Each new invocation takes its
// correlation key's lock first, as InsertInvocation does.
func (t *Tx) WriteAdvance(ctx context.Context, w AdvanceWrite) ([]int64, error) {
	var b pgx.Batch
	ignore := func(pgconn.CommandTag) error { return nil }
	for _, inv := range w.NewInvocations {
		b.Queue("SELECT pg_advisory_xact_lock($1)", correlationLockKey(inv.CorrelationKey)).Exec(ignore)
		b.Queue(insertInvocationSQL, insertInvocationArgs(inv)...).Exec(ignore)
	}
	for _, u := range w.InvocationUpdates {
		b.Queue(updateInvocationSQL, u.ID, nullString(u.ExternalID), u.TimeoutAt, nullJSON(u.Context)).Exec(ignore)
	}
	for status, ids := range w.Finished {
		b.Queue(finishInvocationsSQL, ids, status).Exec(ignore)
	}
	if len(w.Steps) > 0 {
		b.Queue(updateStepsSQL, stepChangeArgs(w.Steps)...).Exec(ignore)
	}
	var leased []int64
	if len(w.Leases) > 0 {
		b.Queue(acquireLeasesSQL, acquireLeaseArgs(w.Worker, w.LeaseUntil, w.Leases)...).Query(func(rows pgx.Rows) (err error) {
			leased, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			return err
		})
	}
	if len(w.Processed) > 0 {
		b.Queue(markNotificationsSQL, w.Processed, "processed").Exec(ignore)
	}
	if len(w.Receipts) > 0 {
		b.Queue(writeReceiptsSQL, receiptArgs(w.Receipts)...).Exec(ignore)
	}
	if len(w.Events) > 0 {
		b.Queue(appendEventsSQL, eventArgs(w.Events)...).Exec(ignore)
	}
	if len(w.Runbooks) > 0 {
		b.Queue(updateRunbookStatesSQL, runbookStateArgs(w.Runbooks)...).Exec(ignore)
	}
	for id, keys := range w.Compensate {
		b.Queue(`UPDATE runbook_steps SET compensation_status = 'pending', updated_at = now()
			WHERE runbook_id = $1 AND key = ANY($2) AND status = 'complete' AND NOT simulated`, id, keys).Exec(ignore)
	}
	if b.Len() == 0 {
		return nil, nil
	}
	if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, translate(err)
	}
	return leased, nil
}

// updateRunbookStatesSQL writes the state changes of many runbooks (not
// plans, which only an extension changes, one at a time).
const updateRunbookStatesSQL = `
	UPDATE runbooks r SET
		status        = coalesce(u.status, r.status),
		error_code    = coalesce(u.err_code, r.error_code),
		error_message = coalesce(u.err_msg, r.error_message),
		finished_at   = CASE WHEN u.finished THEN now() ELSE r.finished_at END,
		wake_at       = CASE WHEN u.set_wake THEN u.wake_at ELSE r.wake_at END,
		updated_at    = now()
	FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bool[], $6::bool[], $7::timestamptz[])
		AS u(id, status, err_code, err_msg, finished, set_wake, wake_at)
	WHERE r.id = u.id`

func runbookStateArgs(changes []RunbookChange) []any {
	n := len(changes)
	ids := make([]uuid.UUID, n)
	status, codes, msgs := make([]*string, n), make([]*string, n), make([]*string, n)
	finished, setWake := make([]bool, n), make([]bool, n)
	wake := make([]*time.Time, n)
	for i, c := range changes {
		ids[i], status[i], codes[i], msgs[i] = c.ID, c.Status, c.ErrorCode, c.ErrorMessage
		finished[i], setWake[i], wake[i] = c.Finished, c.SetWake, c.WakeAt
	}
	return []any{ids, status, codes, msgs, finished, setWake, wake}
}

// StepKey names a step by runbook and key.
type StepKey struct {
	RunbookID uuid.UUID
	Key       string
}

// StepDataByKey loads the resolved arguments and results of steps named by
// runbook and key.
func (t *Tx) StepDataByKey(ctx context.Context, keys []StepKey) (map[StepKey]StepData, error) {
	runbooks := make([]uuid.UUID, len(keys))
	names := make([]string, len(keys))
	for i, k := range keys {
		runbooks[i], names[i] = k.RunbookID, k.Key
	}
	rows, err := t.tx.Query(ctx, `
		SELECT s.runbook_id, s.key, s.resolved_args, s.result
		FROM runbook_steps s JOIN unnest($1::uuid[], $2::text[]) AS u(r, k) ON s.runbook_id = u.r AND s.key = u.k`,
		runbooks, names)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[StepKey]StepData, len(keys))
	for rows.Next() {
		var k StepKey
		var args, result []byte
		if err := rows.Scan(&k.RunbookID, &k.Key, &args, &result); err != nil {
			return nil, translate(err)
		}
		out[k] = StepData{ResolvedArgs: rawJSON(args), Result: rawJSON(result)}
	}
	return out, translate(rows.Err())
}
