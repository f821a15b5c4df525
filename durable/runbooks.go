package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// CreateRunbook stores a new runbook, due at once, unless one with the same
// request key exists; then it returns that one and created=false, whatever
// its state. It takes the new runbook's advisory lock.
//
// Submitting is the daemon's busiest write, so it costs two round trips
// besides the transaction's own: the lock and the runbook row in one
// batch, then its steps, first event and wake-up in another (a
// large plan's steps go by COPY, one more). The new row is returned as
// the insert wrote it, plan included, without reading it again.
func (t *Tx) CreateRunbook(ctx context.Context, n driver.NewRunbook) (rb *driver.Runbook, created bool, err error) {
	if err := checkEventTypes(n.Events); err != nil {
		return nil, false, err
	}
	var head pgx.Batch
	head.Queue("SELECT pg_advisory_xact_lock($1)", RunbookLockKey(n.ID))
	head.Queue(`
		INSERT INTO runbooks (id, plan, plan_hash, inputs, mode, request_key, status,
			lineage_root, lineage_parent, generation, tenant, actor,
			trace_id, parent_span_id, trace_flags, tracestate, correlation_id, policy_hash, budget, name, submitter_scope)
		VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, 'executing'), $8, $9, $10, coalesce($11, 'default'), $12,
			$13, $14, $15, $16, $17, $18, $19, coalesce($20, (SELECT p.name FROM runbooks p WHERE p.id = $9)), $21)
		ON CONFLICT (request_key) DO NOTHING
		RETURNING `+strings.Replace(runbookNamedColumnsWithoutPlan, wakeColumn, "now()", 1),
		n.ID, n.Plan, n.PlanHash, jsonOrEmpty(n.Inputs), n.Mode, n.RequestKey, nullString(n.Status),
		nullUUID(n.Lineage.Root), nullUUID(n.Lineage.Parent), n.Lineage.Generation, nullString(n.Tenant), n.Actor,
		nullString(n.Trace.TraceID), nullString(n.Trace.ParentSpanID), traceFlags(n.Trace), nullString(n.Trace.State),
		nullString(n.Trace.CorrelationID), nullString(n.PolicyHash), budgetJSON(n.Budget), nullString(n.Name), scopeJSON(n.Scope)).QueryRow(func(row pgx.Row) error {
		rb, err = scanNamedRunbook(row)
		return err
	})
	err = t.tx.SendBatch(ctx, &head).Close()
	if errors.Is(err, driver.ErrNotFound) {
		existing, err := t.runbookByRequestKey(ctx, n.RequestKey)
		return existing, false, err
	}
	if err != nil {
		return nil, false, translate(err)
	}
	rb.Plan = n.Plan

	var rest pgx.Batch
	if len(n.Steps) >= copyThreshold {
		if err := t.copySteps(ctx, n.ID, n.Steps); err != nil {
			return nil, false, err
		}
	} else {
		queueInsertSteps(&rest, n.ID, n.Steps)
	}
	if !n.EdgesInPlan {
		queueInsertEdges(&rest, n.ID, n.Edges)
	}
	rest.Queue(`INSERT INTO runbook_wakeups (runbook_id, wake_at) VALUES ($1, now())`, n.ID)
	events := []driver.Event{{RunbookID: n.ID, Type: rbtype.EventRunbookSubmitted, WorkerID: n.WorkerID, Data: n.SubmittedData}}
	for _, e := range n.Events {
		e.RunbookID = n.ID // the id the key came to (a run after a failed one has its own)
		events = append(events, e)
	}
	rest.Queue(appendEventsSQL, eventArgs(events)...)
	if err := t.tx.SendBatch(ctx, &rest).Close(); err != nil {
		return nil, false, translate(err)
	}
	return rb, true, nil
}

// budgetJSON stores a budget as JSON, nil as NULL.
func budgetJSON(b *rbtype.Budget) []byte {
	if b == nil {
		return nil
	}
	raw, err := json.Marshal(b)
	if err != nil {
		panic("durable: a budget does not encode: " + err.Error()) // numbers only
	}
	return raw
}

// traceFlags stores a trace's flags with its trace id: none without one.
func traceFlags(t driver.Trace) *int16 {
	if t.TraceID == "" {
		return nil
	}
	f := int16(t.Flags)
	return &f
}

// runbookColumnsWithoutPlan are runbookColumns with the plan left out
// (JSON null): a caller that has the plan does not need it sent back.
var runbookColumnsWithoutPlan = strings.Replace(runbookColumns, "plan, ", "'null'::jsonb, ", 1)

func jsonOrEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

// copyThreshold is the number of steps from which inserting uses COPY: one
// round trip either way, but COPY skips per-row parsing for large plans.
const copyThreshold = 64

// copySteps stores steps with COPY.
func (t *Tx) copySteps(ctx context.Context, runbookID uuid.UUID, steps []driver.NewStep) error {
	rows := make([][]any, len(steps))
	for i, s := range steps {
		rows[i] = []any{runbookID, s.Key, s.Position, s.Verb, string(s.Args), string(s.Execution), string(s.Gate), nullString(s.IdempotencyKey)}
	}
	_, err := t.tx.CopyFrom(ctx, pgx.Identifier{"runbook_steps"},
		[]string{"runbook_id", "key", "position", "verb", "args", "execution", "gate", "idempotency_key"}, pgx.CopyFromRows(rows))
	return translate(err)
}

// queueInsertSteps adds the insert of steps to a batch.
func queueInsertSteps(b *pgx.Batch, runbookID uuid.UUID, steps []driver.NewStep) {
	if len(steps) == 0 {
		return
	}
	keys := make([]string, len(steps))
	positions := make([]int32, len(steps))
	verbs := make([]string, len(steps))
	args := make([]string, len(steps))
	execs := make([]string, len(steps))
	gates := make([]string, len(steps))
	idem := make([]string, len(steps))
	for i, s := range steps {
		keys[i], positions[i], verbs[i], args[i], execs[i], gates[i] = s.Key, int32(s.Position), s.Verb, string(s.Args), string(s.Execution), string(s.Gate)
		idem[i] = s.IdempotencyKey
	}
	b.Queue(`
		INSERT INTO runbook_steps (runbook_id, key, position, verb, args, execution, gate, idempotency_key)
		SELECT $1, k, p, v, a::jsonb, e::jsonb, g, nullif(i, '')
		FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS u(k, p, v, a, e, g, i)`,
		runbookID, keys, positions, verbs, args, execs, gates, idem)
}

// queueInsertEdges adds the insert of edges to a batch: edges that are
// not in the runbook's stored plan (runbook_edges shows those from the
// plan, migration 027).
func queueInsertEdges(b *pgx.Batch, runbookID uuid.UUID, edges []driver.Edge) {
	if len(edges) == 0 {
		return
	}
	from := make([]string, len(edges))
	to := make([]string, len(edges))
	kind := make([]string, len(edges))
	for i, e := range edges {
		from[i], to[i], kind[i] = e.From, e.To, e.Kind
	}
	b.Queue(`
		INSERT INTO runbook_edge_rows (runbook_id, from_key, to_key, kind)
		SELECT $1, f, t, k FROM unnest($2::text[], $3::text[], $4::text[]) AS u(f, t, k)`,
		runbookID, from, to, kind)
}

// wakeColumn reads a runbook's wake-up from its own table (migration 013),
// in a query FROM runbooks.
const wakeColumn = `(SELECT w.wake_at FROM runbook_wakeups w WHERE w.runbook_id = runbooks.id)`

const runbookColumns = `id, plan, plan_hash, inputs, status, mode, request_key, version, ` + wakeColumn + `,
	coalesce(error_code, ''), coalesce(error_message, ''), created_at, updated_at, finished_at,
	lineage_root, lineage_parent, generation, tenant, actor, ` + traceColumns + `,
	coalesce(policy_hash, ''), budget, spent_cost_usd::float8, spent_tokens, spent_credits::float8, submitter_scope`

// traceColumns are a runbook's trace context (migration 009); NULLs, a
// runbook stored before it, read as empty.
const traceColumns = `coalesce(trace_id, ''), coalesce(parent_span_id, ''), coalesce(trace_flags, 1),
	coalesce(tracestate, ''), coalesce(correlation_id, '')`

// runbookNamedColumns are runbookColumns and the runbook's name (migration
// 022), for the reads that answer the API; the advance, which never shows
// a name, reads runbookColumns.
const runbookNamedColumns = runbookColumns + `, coalesce(name, '')`

// listColumns are runbookNamedColumnsWithoutPlan for a listing, whose
// runbooks are r.
var listColumns = strings.ReplaceAll(runbookNamedColumnsWithoutPlan, "runbooks.id", "r.id")

// runbookNamedColumnsWithoutPlan are runbookNamedColumns with the plan
// left out, as runbookColumnsWithoutPlan.
var runbookNamedColumnsWithoutPlan = strings.Replace(runbookNamedColumns, "plan, ", "'null'::jsonb, ", 1)

func scanRunbook(row pgx.Row) (*driver.Runbook, error) { return scanRunbookRow(row, false) }

// scanNamedRunbook scans runbookNamedColumns.
func scanNamedRunbook(row pgx.Row) (*driver.Runbook, error) { return scanRunbookRow(row, true) }

func scanRunbookRow(row pgx.Row, named bool) (*driver.Runbook, error) {
	var r driver.Runbook
	var root, parent *uuid.UUID
	var flags int16
	var budget, scope []byte
	dest := []any{&r.ID, &r.Plan, &r.PlanHash, &r.Inputs, &r.Status, &r.Mode, &r.RequestKey, &r.Version, &r.WakeAt,
		&r.ErrorCode, &r.ErrorMessage, &r.CreatedAt, &r.UpdatedAt, &r.FinishedAt, &root, &parent, &r.Lineage.Generation, &r.Tenant, &r.Actor,
		&r.Trace.TraceID, &r.Trace.ParentSpanID, &flags, &r.Trace.State, &r.Trace.CorrelationID,
		&r.PolicyHash, &budget, &r.Spent.CostUSD, &r.Spent.Tokens, &r.Spent.Credits, &scope}
	if named {
		dest = append(dest, &r.Name)
	}
	err := row.Scan(dest...)
	if err != nil {
		return nil, translate(err)
	}
	if len(budget) > 0 {
		r.Budget = &rbtype.Budget{}
		if err := json.Unmarshal(budget, r.Budget); err != nil {
			return nil, fmt.Errorf("runbook %s: its budget does not decode: %w", r.ID, err)
		}
	}
	if len(scope) > 0 {
		r.Scope = &rbtype.TokenScope{}
		if err := json.Unmarshal(scope, r.Scope); err != nil {
			return nil, fmt.Errorf("runbook %s: its submitter's scope does not decode: %w", r.ID, err)
		}
	}
	r.Trace.Flags = byte(flags)
	if root != nil {
		r.Lineage.Root = *root
	}
	if parent != nil {
		r.Lineage.Parent = *parent
	}
	return &r, nil
}

// nullUUID stores uuid.Nil as NULL: an original runbook has no lineage
// root or parent.
func nullUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

func (t *Tx) runbookByRequestKey(ctx context.Context, key string) (*driver.Runbook, error) {
	return scanNamedRunbook(t.tx.QueryRow(ctx, "SELECT "+runbookNamedColumns+" FROM runbooks WHERE request_key = $1", key))
}

// Runbook loads one runbook outside any transaction, its name included.
func (s *Store) Runbook(ctx context.Context, id uuid.UUID) (*driver.Runbook, error) {
	return viewReader{s.pool}.Runbook(ctx, id)
}

// Runbook loads one runbook, as Store.Runbook does.
func (r viewReader) Runbook(ctx context.Context, id uuid.UUID) (*driver.Runbook, error) {
	return scanNamedRunbook(r.q.QueryRow(ctx, "SELECT "+runbookNamedColumns+" FROM runbooks WHERE id = $1", id))
}

var runbookStatesSQL = `SELECT ` + runbookColumnsWithoutPlan + ` FROM runbooks WHERE id = ANY($1)`

// Plans loads the plans of runbooks.
func (t *Tx) Plans(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID][]byte, error) {
	rows, err := t.tx.Query(ctx, `SELECT id, plan FROM runbooks WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[uuid.UUID][]byte{}
	for rows.Next() {
		var id uuid.UUID
		var plan []byte
		if err := rows.Scan(&id, &plan); err != nil {
			return nil, translate(err)
		}
		out[id] = plan
	}
	return out, translate(rows.Err())
}

// RunbookStatus returns a runbook's status, and whether it has finished
// (nothing more will happen to it: a failed runbook still compensating has
// not), without loading its plan: what a live event stream polls.
func (s *Store) RunbookStatus(ctx context.Context, id uuid.UUID) (driver.RunbookState, error) {
	var st driver.RunbookState
	err := s.pool.QueryRow(ctx, `SELECT status, finished_at IS NOT NULL, tenant, coalesce(trace_id, ''), coalesce(correlation_id, '')
		FROM runbooks WHERE id = $1`, id).Scan(&st.Status, &st.Finished, &st.Tenant, &st.TraceID, &st.CorrelationID)
	return st, translate(err)
}

// ListRunbooks lists runbooks newest first, optionally only those in a
// status, after a cursor from a previous page. Plans are left out.
func (s *Store) ListRunbooks(ctx context.Context, q driver.RunbookQuery) (*driver.RunbookPage, error) {
	sql, args, limit, err := listRunbooksQuery(q)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	page := &driver.RunbookPage{}
	for rows.Next() {
		r, err := scanNamedRunbook(rows)
		if err != nil {
			return nil, err
		}
		page.Runbooks = append(page.Runbooks, r)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if len(page.Runbooks) > limit {
		page.Runbooks = page.Runbooks[:limit]
		last := page.Runbooks[limit-1]
		page.Next = encodeCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}

// listRunbooksQuery is a listing's statement, its arguments and its page
// size.
func listRunbooksQuery(q driver.RunbookQuery) (sql string, args []any, limit int, err error) {
	limit = q.Limit
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	afterTime, afterID, err := decodeCursor(q.After)
	if err != nil {
		return "", nil, 0, err
	}
	join, where, more, err := listFilter(q)
	if err != nil {
		return "", nil, 0, err
	}
	args = append([]any{string(q.Status), afterTime, afterID, limit + 1, q.Tenant}, more...)
	if branches := rareBranches(q); branches != nil {
		// Few runbooks match, and only among some statuses: read those
		// (through their indexes, fenced off from the newest-first order,
		// which would walk all of history to find them), then sort.
		var parts []string
		for _, b := range branches {
			parts = append(parts, `SELECT `+listColumns+` FROM runbooks r`+join+` WHERE `+where+` AND `+b)
		}
		sql = `WITH c AS MATERIALIZED (` + strings.Join(parts, "\n\t\tUNION ALL\n\t\t") + `)
		SELECT * FROM c
		ORDER BY c.created_at DESC, c.id DESC
		LIMIT $4`
		return sql, args, limit, nil
	}
	sql = `
		SELECT ` + listColumns + `
		FROM runbooks r` + join + `
		WHERE ` + where + `
		ORDER BY r.created_at DESC, r.id DESC
		LIMIT $4`
	return sql, args, limit, nil
}

// A cursor is the creation time and id of the last runbook of a page.
func encodeCursor(at time.Time, id uuid.UUID) string {
	return fmt.Sprintf("%d_%s", at.UnixMicro(), id)
}

func decodeCursor(c string) (*time.Time, uuid.UUID, error) {
	if c == "" {
		return nil, uuid.Nil, nil
	}
	var micros int64
	var idText string
	if _, err := fmt.Sscanf(c, "%d_%s", &micros, &idText); err != nil {
		return nil, uuid.Nil, fmt.Errorf("%w: %q is not a page cursor", driver.ErrBadRequest, c)
	}
	id, err := uuid.Parse(idText)
	if err != nil {
		return nil, uuid.Nil, fmt.Errorf("%w: %q is not a page cursor", driver.ErrBadRequest, c)
	}
	at := time.UnixMicro(micros)
	return &at, id, nil
}

// updateRunbookSQL writes one runbook's new state, plan included (an
// extension); see updateRunbookStatesSQL for many runbooks' states.
const updateRunbookSQL = `
	UPDATE runbooks SET
		status        = coalesce($2, status),
		error_code    = coalesce($3, error_code),
		error_message = coalesce($4, error_message),
		finished_at   = CASE WHEN $5 THEN now() WHEN $6 THEN NULL ELSE finished_at END,
		plan          = coalesce($7::jsonb, plan),
		plan_hash     = CASE WHEN $7::jsonb IS NULL THEN plan_hash ELSE $8 END,
		version       = CASE WHEN $7::jsonb IS NULL THEN version ELSE $9 END,
		inputs        = coalesce($10::jsonb, inputs),
		mode          = coalesce($11, mode),
		updated_at    = now()
	WHERE id = $1`

func runbookChangeArgs(c driver.RunbookChange) []any {
	var plan any
	if c.Plan != nil {
		plan = string(c.Plan)
	}
	return []any{c.ID, c.Status, c.ErrorCode, c.ErrorMessage, c.Finished, c.Reopen, plan, c.PlanHash, c.Version, nullJSON(c.Inputs), c.Mode}
}

// setWakeupsSQL sets runbooks' wake-ups, and clearWakeupsSQL drops those
// of runbooks that need none (only the outside world can move them).
const (
	setWakeupsSQL = `
		INSERT INTO runbook_wakeups (runbook_id, wake_at)
		SELECT * FROM unnest($1::uuid[], $2::timestamptz[])
		ON CONFLICT (runbook_id) DO UPDATE SET wake_at = EXCLUDED.wake_at`
	clearWakeupsSQL = `DELETE FROM runbook_wakeups WHERE runbook_id = ANY($1)`
)

// queueWakeups queues the wake-ups runbook changes set or clear.
func queueWakeups(b *pgx.Batch, changes []driver.RunbookChange) {
	var set, clear [][16]byte
	var at []time.Time
	for _, c := range changes {
		switch {
		case !c.SetWake:
		case c.WakeAt == nil:
			clear = append(clear, c.ID)
		default:
			set, at = append(set, c.ID), append(at, *c.WakeAt)
		}
	}
	ignore := func(pgconn.CommandTag) error { return nil }
	if len(set) > 0 {
		b.Queue(setWakeupsSQL, set, at).Exec(ignore)
	}
	if len(clear) > 0 {
		b.Queue(clearWakeupsSQL, clear).Exec(ignore)
	}
}

// Wake makes runbooks due now. The caller holds the runbooks' locks, so no
// advance can overwrite the wake-up with a state computed before it; it
// tells the workers once the transaction has committed (Store.Signal).
func (t *Tx) Wake(ctx context.Context, ids []uuid.UUID) error {
	_, err := t.tx.Exec(ctx, `
		INSERT INTO runbook_wakeups (runbook_id, wake_at) SELECT id, now() FROM unnest($1::uuid[]) AS u(id)
		ON CONFLICT (runbook_id) DO UPDATE SET wake_at = now()`, ids)
	return translate(err)
}

// Signal tells every listening worker that runbooks are due: a NOTIFY on
// the store's channel, in a transaction of its own, after the one that
// made them due has committed. A NOTIFY holds PostgreSQL's one lock on its
// notification queue from its commit's start to its end, WAL flush
// included: sent inside the transactions that change runbooks it made
// their commits wait for one another. This one commits without waiting
// for its WAL (it writes nothing but the notification, which a crash may
// lose either way; the workers' polling finds what is due).
func (s *Store) Signal(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, "BEGIN; SET LOCAL synchronous_commit TO OFF; SELECT pg_notify('"+
		strings.ReplaceAll(s.channel, "'", "''")+"', 'wake'); COMMIT", pgx.QueryExecModeSimpleProtocol)
	return translate(err)
}

// claimDueQuery joins the claimed ids back by primary key (UPDATE ... FROM)
// rather than with IN, which the planner answers with a scan of the whole
// table once it is large enough to matter.
//
// A claim commits asynchronously (synchronous_commit off, for its own
// transaction only): it does not wait for its WAL to reach the disk. A
// claim is a hint, not a record: lost in a crash, its runbooks are simply
// due again and claimed anew, and the advance that follows a claim commits
// synchronously, flushing the claim's WAL with its own. On a busy machine
// the wait for the disk was most of a claim's time, and a claim stands
// between every wake-up (a notification, a submission) and its advance.
const claimDueQuery = `
	UPDATE runbook_wakeups w SET wake_at = now() + $2::interval
	FROM (
		SELECT runbook_id FROM runbook_wakeups
		WHERE wake_at <= now()
		ORDER BY wake_at
		LIMIT $1
		FOR UPDATE SKIP LOCKED) due
	WHERE w.runbook_id = due.runbook_id
	RETURNING w.runbook_id`

// ClaimDue hands out up to limit runbooks whose wake_at has passed, most
// overdue first, and pushes their wake_at claimFor ahead, so that other
// workers skip them meanwhile and pick them up again should this worker
// die. Rows locked by other transactions are skipped, not waited for.
func (s *Store) ClaimDue(ctx context.Context, limit int, claimFor time.Duration) ([]uuid.UUID, error) {
	// One round trip: SET LOCAL needs a transaction block of its own.
	var b pgx.Batch
	var ids []uuid.UUID
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit TO off")
	b.Queue(claimDueQuery, limit, claimFor).Query(func(rows pgx.Rows) (err error) {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		return err
	})
	b.Queue("COMMIT")
	return ids, translate(s.pool.SendBatch(ctx, &b).Close())
}

// NextWake is the earliest wake_at of any runbook, nil when none is set.
// Workers sleep until then when there is nothing to do.
func (s *Store) NextWake(ctx context.Context) (*time.Time, error) {
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT min(wake_at) FROM runbook_wakeups`).Scan(&at)
	return at, translate(err)
}

// CountByStatus counts runbooks by status.
func (s *Store) CountByStatus(ctx context.Context) (map[rbtype.RunbookStatus]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM runbooks GROUP BY status`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[rbtype.RunbookStatus]int64{}
	for rows.Next() {
		var st rbtype.RunbookStatus
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, translate(err)
		}
		out[st] = n
	}
	return out, translate(rows.Err())
}

// scopeJSON is a submitter's scope as stored (migration 023); NULL for
// none.
func scopeJSON(s *rbtype.TokenScope) []byte {
	if s == nil {
		return nil
	}
	b, _ := json.Marshal(s) // strings only
	return b
}
