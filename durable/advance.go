package durable

import (
	"bytes"
	"context"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The advance of a batch of runbooks is the hot path: throughput depends on
// its round trips. LoadForAdvance and WriteAdvance each send their
// statements as one pipelined batch, so that an advance costs BEGIN, the
// locks, one load, one write and COMMIT, whatever the batch holds.

// liveStepsSQL reads the steps an advance can change or must look at: all
// but the plainly completed ones. A completed step can only matter as a
// predecessor (it is complete; its result is fetched by key when a
// dependent starts) or for compensation and dry runs (then it is read).
// A chain returns the steps it has not finished, fewer each transaction.
//
// Each runbook's steps are looked up on their own, through the
// (runbook_id, position) index: OFFSET 0 keeps PostgreSQL from folding
// the lookup into a join it plans from the table's statistics. Those go
// stale whenever the table grows faster than autovacuum analyzes it
// (submissions in bulk): planned as `runbook_id = ANY($1)`, a batch of 64
// runbooks was then estimated at thousands of rows and read by a parallel
// scan of the whole table (TestTheAdvanceLoadKeepsToItsIndexWhenStatisticsAreStale).
var liveStepsSQL = `SELECT s.* FROM unnest($1::uuid[]) AS r(id), LATERAL (
	SELECT ` + stepStateColumns + ` FROM runbook_steps
	WHERE runbook_id = r.id
	  AND (status <> 'complete' OR simulated OR compensation_status IN ('pending', 'running'))
	OFFSET 0) s
	ORDER BY s.runbook_id, s.position`

// allStepsSQL reads every step of the runbooks, for a command that looks
// at completed ones too.
var allStepsSQL = `SELECT s.* FROM unnest($1::uuid[]) AS r(id), LATERAL (
	SELECT ` + stepStateColumns + ` FROM runbook_steps
	WHERE runbook_id = r.id
	OFFSET 0) s
	ORDER BY s.runbook_id, s.position`

// LoadForAdvance reads the runbooks' state in one round trip: the rows,
// their live steps (all of them with o.AllSteps) with their lease
// columns, their active invocations and the notifications received for
// them.
func (t *Tx) LoadForAdvance(ctx context.Context, ids []uuid.UUID, o driver.LoadOptions) (*driver.AdvanceState, error) {
	var b pgx.Batch
	st := queueLoad(&b, ids, o)
	if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, translate(err)
	}
	return st, nil
}

// queueLoad queues the reads of the runbooks' state; the state returned
// is filled in when the batch runs.
func queueLoad(b *pgx.Batch, ids []uuid.UUID, o driver.LoadOptions) *driver.AdvanceState {
	st := &driver.AdvanceState{}
	ids16 := uuidArray(ids) // encoded four times below
	b.Queue(runbookStatesSQL, ids16).Query(func(rows pgx.Rows) error {
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
	steps := liveStepsSQL
	if o.AllSteps {
		steps = allStepsSQL
	}
	b.Queue(steps, ids16).
		Query(func(rows pgx.Rows) error {
			defer rows.Close()
			sc := newStepScanner()
			for rows.Next() {
				s, err := sc.scan(rows)
				if err != nil {
					return err
				}
				st.Steps = append(st.Steps, s)
			}
			return rows.Err()
		})
	b.Queue(activeInvocationsSQL, ids16).Query(func(rows pgx.Rows) (err error) {
		st.Invocations, err = pgx.CollectRows(rows, scanInvocation)
		return err
	})
	b.Queue(notificationsForRunbooksSQL, ids16).Query(func(rows pgx.Rows) (err error) {
		st.Notifications, err = pgx.CollectRows(rows, scanNotification)
		return err
	})
	if !o.Day.IsZero() {
		queueBudgets(b, ids16, o.Day, o.AllSpend, st)
	}
	return st
}

// WriteAdvance writes an advance's changes in one round trip (two when an
// extension adds enough steps to COPY them) and returns the ids of the
// steps it leased. Each new invocation takes its correlation key's lock
// first, as a notification does (see StoreNotification).
func (t *Tx) WriteAdvance(ctx context.Context, w driver.AdvanceWrite) ([]int64, error) {
	if err := checkEventTypes(w.Events); err != nil {
		return nil, err
	}
	var b pgx.Batch
	var leased []int64
	for _, id := range slices.SortedFunc(maps.Keys(w.NewSteps), compareUUID) {
		if steps := w.NewSteps[id]; len(steps) >= copyThreshold {
			// COPY is a round trip of its own; what a large extension
			// saves on parsing rows is worth it.
			if err := t.copySteps(ctx, id, steps); err != nil {
				return nil, err
			}
		} else {
			queueInsertSteps(&b, id, steps)
		}
	}
	queueAdvance(&b, w, leaseOps(w), &leased)
	if b.Len() == 0 {
		return nil, nil
	}
	if err := t.tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, translate(err)
	}
	return leased, nil
}

// leaseOps says what the write does to each step's lease: take the leases
// asked for, and clear those that ended. The step's own update carries the
// operation; a step the advance does not otherwise change gets a
// statement of its own (leasesOfUnchangedSteps).
func leaseOps(w driver.AdvanceWrite) (ops map[int64]string) {
	ops = make(map[int64]string, len(w.Leases)+len(w.EndLeases))
	for _, id := range w.EndLeases {
		ops[id] = leaseClear
	}
	for _, l := range w.Leases {
		ops[l.StepID] = leaseTake
	}
	return ops
}

// queueAdvance queues an advance's statements; the ids of the steps leased
// land in leased when the batch runs. Maps are walked in sorted order: the
// same write always sends the same statements in the same order, which
// keeps lock order and logs reproducible.
func queueAdvance(b *pgx.Batch, w driver.AdvanceWrite, leaseOps map[int64]string, leased *[]int64) {
	ignore := func(pgconn.CommandTag) error { return nil }
	if len(w.NewInvocations) > 0 {
		// Each key's lock before its invocation is inserted, all in one
		// statement: a notification for one of them holds it until it
		// commits, and the runbook's lock, which this advance holds, is
		// the only one such a notification takes first.
		keys := make([]int64, len(w.NewInvocations))
		for i, inv := range w.NewInvocations {
			keys[i] = correlationLockKey(inv.CorrelationKey)
		}
		b.Queue(lockKeysSQL, keys).Exec(ignore)
	}
	for _, inv := range w.NewInvocations {
		b.Queue(insertInvocationSQL, insertInvocationArgs(inv)...).Exec(ignore)
	}
	for _, u := range w.InvocationUpdates {
		b.Queue(updateInvocationSQL, u.ID, nullString(u.ExternalID), u.TimeoutAt, nullJSON(u.Context)).Exec(ignore)
	}
	for _, status := range slices.Sorted(maps.Keys(w.Finished)) {
		if ids := w.Finished[status]; len(ids) > 0 {
			b.Queue(finishInvocationsSQL, ids, string(status)).Exec(ignore)
		}
	}
	clears, takes := leasesOfUnchangedSteps(w.Steps, leaseOps)
	if len(clears) > 0 {
		b.Queue(clearLeasesSQL, clears).Exec(ignore)
	}
	if len(takes) > 0 {
		b.Queue(takeLeasesSQL, takes, w.Worker, w.LeaseUntil, leaseAttempts(w.Leases, takes)).Query(func(rows pgx.Rows) error {
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			*leased = append(*leased, ids...)
			return err
		})
	}
	if len(w.Steps) > 0 {
		b.Queue(updateStepsSQL, stepChangeArgs(w.Steps, leaseOps, w.Worker, w.LeaseUntil)...).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var id int64
				var took bool
				if err := rows.Scan(&id, &took); err != nil {
					return err
				}
				if took {
					*leased = append(*leased, id)
				}
			}
			return rows.Err()
		})
	}
	if len(w.Processed) > 0 {
		b.Queue(markNotificationsSQL, w.Processed, string(rbtype.NotificationProcessed)).Exec(ignore)
	}
	if len(w.Attempts) > 0 {
		b.Queue(writeAttemptsSQL, attemptArgs(w.Attempts)...).Exec(ignore)
	}
	if len(w.Attempts) > 0 || len(w.Reservations) > 0 {
		queueSpend(b, w.Attempts, w.Reservations)
	}
	if len(w.Unreserved) > 0 {
		queueUnreserved(b, w.Unreserved)
	}
	if len(w.Arguments) > 0 {
		b.Queue(writeArgumentsSQL, argumentsArgs(w.Arguments)...).Exec(ignore)
	}
	if len(w.Outcomes) > 0 {
		// After the attempts: an outcome may take its arguments' hash from
		// its attempt's row.
		b.Queue(writeOutcomesSQL, outcomeArgs(w.Outcomes)...).Exec(ignore)
	}
	if len(w.Cache) > 0 {
		b.Queue(writeCacheSQL, cacheArgs(w.Cache)...).Exec(ignore)
	}
	if len(w.Receipts) > 0 {
		b.Queue(writeReceiptsSQL, receiptArgs(w.Receipts)...).Exec(ignore)
	}
	if len(w.Events) > 0 {
		b.Queue(appendEventsSQL, eventArgs(w.Events)...).Exec(ignore)
	}
	for _, id := range slices.SortedFunc(maps.Keys(w.NewEdges), compareUUID) {
		if !writesPlan(w.Runbooks, id) {
			queueInsertEdges(b, id, w.NewEdges[id])
		}
	}
	for _, m := range w.Mutations {
		b.Queue(appendMutationSQL, m.RunbookID, m.Actor, string(m.Kind), string(jsonOrEmpty(m.Payload))).Exec(ignore)
	}
	queueTrust(b, w.Trust)
	// Most changes of runbook rows are states, written many at once; a
	// change of plan, inputs or mode (an extension, a draft run for real)
	// or a reopening is rare, and written on its own.
	var states []driver.RunbookChange
	for _, c := range w.Runbooks {
		switch {
		case c.Plan != nil || c.Inputs != nil || c.Mode != nil || c.Reopen:
			b.Queue(updateRunbookSQL, runbookChangeArgs(c)...).Exec(ignore)
		case changesState(c):
			states = append(states, c)
		}
	}
	if len(states) > 0 {
		b.Queue(updateRunbookStatesSQL, runbookStateArgs(states)...).Exec(ignore)
	}
	queueWakeups(b, w.Runbooks)
	for _, id := range slices.SortedFunc(maps.Keys(w.Compensate), compareUUID) {
		b.Queue(markCompensationsSQL, id, w.Compensate[id]).Exec(ignore)
	}
}

// leasesOfUnchangedSteps lists, sorted, the steps whose leases end or are
// taken that the advance does not otherwise change. The runtime changes
// every step it leases and most whose leases ended (it reclaims them);
// these statements do the rest.
func leasesOfUnchangedSteps(steps []driver.StepChange, ops map[int64]string) (clears, takes []int64) {
	changed := make(map[int64]bool, len(steps))
	for _, c := range steps {
		changed[c.ID] = true
	}
	for id, op := range ops {
		switch {
		case changed[id]:
		case op == leaseClear:
			clears = append(clears, id)
		case op == leaseTake:
			takes = append(takes, id)
		}
	}
	slices.Sort(clears)
	slices.Sort(takes)
	return clears, takes
}

// leaseAttempts gives the attempt asked for of each step in ids.
func leaseAttempts(reqs []driver.LeaseRequest, ids []int64) []int32 {
	byStep := make(map[int64]int, len(reqs))
	for _, r := range reqs {
		byStep[r.StepID] = r.Attempt
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(byStep[id])
	}
	return out
}

// takeLeasesSQL takes leases on steps, under the guard updateStepsSQL
// takes them under.
var takeLeasesSQL = `UPDATE runbook_steps s
	SET lease_worker = $2, lease_attempt = u.attempt, lease_acquired_at = now(), lease_expires_at = $3
	FROM unnest($1::bigint[], $4::int[]) AS u(id, attempt)
	WHERE s.id = u.id AND ` + leaseIsFreeFor("$2") + `
	RETURNING s.id`

// clearLeasesSQL ends the leases of steps.
const clearLeasesSQL = `UPDATE runbook_steps
	SET lease_worker = NULL, lease_attempt = NULL, lease_acquired_at = NULL, lease_expires_at = NULL
	WHERE id = ANY($1)`

// markCompensationsSQL marks a failed runbook's completed steps, by key,
// as waiting to be undone.
const markCompensationsSQL = `UPDATE runbook_steps SET compensation_status = 'pending', updated_at = now()
	WHERE runbook_id = $1 AND key = ANY($2) AND status = 'complete' AND NOT simulated`

// writesPlan reports whether the changes write runbook id's plan: an
// extension or an expansion, whose new edges are the new plan's
// (machine: extend.go, loops.go). runbook_edges shows a runbook's edges
// from its stored plan (migration 027), so those are not stored again.
func writesPlan(changes []driver.RunbookChange, id uuid.UUID) bool {
	for _, c := range changes {
		if c.ID == id && c.Plan != nil {
			return true
		}
	}
	return false
}

func compareUUID(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }

// updateRunbookStatesSQL writes the state changes of many runbooks (not
// plans, which only an extension changes, one at a time). Wake-ups are
// rows of their own (queueWakeups).
const updateRunbookStatesSQL = `
	UPDATE runbooks r SET
		status        = coalesce(u.status, r.status),
		error_code    = coalesce(u.err_code, r.error_code),
		error_message = coalesce(u.err_msg, r.error_message),
		finished_at   = CASE WHEN u.finished THEN now() ELSE r.finished_at END,
		updated_at    = now()
	FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bool[])
		AS u(id, status, err_code, err_msg, finished)
	WHERE r.id = u.id`

func runbookStateArgs(changes []driver.RunbookChange) []any {
	n := len(changes)
	ids := make([][16]byte, n)
	status, codes, msgs := make(pgtype.FlatArray[pgtype.Text], n), make(pgtype.FlatArray[pgtype.Text], n), make(pgtype.FlatArray[pgtype.Text], n)
	finished := make([]bool, n)
	for i, c := range changes {
		ids[i], status[i], codes[i], msgs[i] = c.ID, textOrNull(c.Status), textOrNull(c.ErrorCode), textOrNull(c.ErrorMessage)
		finished[i] = c.Finished
	}
	return []any{ids, status, codes, msgs, finished}
}

// changesState reports whether a runbook change writes the runbook row,
// not only its wake-up: most advances change a wake-up and nothing else.
func changesState(c driver.RunbookChange) bool {
	return c.Status != nil || c.ErrorCode != nil || c.ErrorMessage != nil || c.Finished
}

// StepDataByKey loads the resolved arguments and results of steps named by
// runbook and key.
func (t *Tx) StepDataByKey(ctx context.Context, keys []driver.StepKey) (map[driver.StepKey]driver.StepData, error) {
	runbooks := make([][16]byte, len(keys))
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
	out := make(map[driver.StepKey]driver.StepData, len(keys))
	for rows.Next() {
		var k driver.StepKey
		var args, result []byte
		if err := rows.Scan(&k.RunbookID, &k.Key, &args, &result); err != nil {
			return nil, translate(err)
		}
		out[k] = driver.StepData{ResolvedArgs: rawJSON(args), Result: rawJSON(result)}
	}
	return out, translate(rows.Err())
}
