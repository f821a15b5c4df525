package durable

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

const invocationColumns = `invocation_id, step_id, runbook_id, attempt, correlation_key, status, parked_at,
	timeout_at, context, coalesce(external_id, ''), finished_at, coalesce(idempotency_key, ''), attached`

// invocationFields are where invocationColumns scan to.
func invocationFields(i *driver.Invocation) []any {
	return []any{&i.InvocationID, &i.StepID, &i.RunbookID, &i.Attempt, &i.CorrelationKey, &i.Status, &i.ParkedAt,
		&i.TimeoutAt, &i.Context, &i.ExternalID, &i.FinishedAt, &i.IdempotencyKey, &i.Attached}
}

func scanInvocation(r pgx.CollectableRow) (driver.Invocation, error) {
	var i driver.Invocation
	err := r.Scan(invocationFields(&i)...)
	return i, err
}

const insertInvocationSQL = `
	INSERT INTO invocation_records (invocation_id, step_id, runbook_id, attempt, correlation_key, timeout_at, context,
		idempotency_key, attached)
	VALUES ($1, $2, $3, $4, $5, $6, $7, nullif($8, ''), $9)
	ON CONFLICT (invocation_id) DO NOTHING`

func insertInvocationArgs(inv driver.Invocation) []any {
	return []any{inv.InvocationID, inv.StepID, inv.RunbookID, inv.Attempt, inv.CorrelationKey, inv.TimeoutAt, jsonOrEmpty(inv.Context),
		inv.IdempotencyKey, inv.Attached}
}

// openWaitsByKeySQL finds, for each shared key, the first open wait that
// is not itself a twin's (invocation_records_open_key).
const openWaitsByKeySQL = `
	SELECT DISTINCT ON (idempotency_key) idempotency_key, runbook_id, step_id, correlation_key
	FROM invocation_records
	WHERE idempotency_key = ANY($1) AND status = 'active' AND NOT attached
	ORDER BY idempotency_key, parked_at, invocation_id`

// OpenWaitsByKey returns, by idempotency key, the first open wait under
// that key that is not a twin's: the wait a twin attaches to
// (docs/design/semantics.md section 16).
func (t *Tx) OpenWaitsByKey(ctx context.Context, keys []string) (map[string]driver.Invocation, error) {
	out := map[string]driver.Invocation{}
	if len(keys) == 0 {
		return out, nil
	}
	// Two runbooks starting the same key at once would each find the
	// other's wait not yet written: each key's lock (in an advisory key
	// space apart from the runbooks' single-key locks), taken in order
	// and held until the transaction that writes the wait commits, makes
	// the second find the first's.
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('rbd-twin'), hashtext(k)) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n`, sorted); err != nil {
		return nil, translate(err)
	}
	rows, err := t.tx.Query(ctx, openWaitsByKeySQL, keys)
	if err != nil {
		return nil, translate(err)
	}
	invs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Invocation, error) {
		var i driver.Invocation
		err := r.Scan(&i.IdempotencyKey, &i.RunbookID, &i.StepID, &i.CorrelationKey)
		return i, err
	})
	if err != nil {
		return nil, translate(err)
	}
	for _, i := range invs {
		out[i.IdempotencyKey] = i
	}
	return out, nil
}

// activeInvocationsSQL reads the runbooks' active invocations, each
// runbook's through the index on runbook_id, the way liveStepsSQL reads
// steps. As status = 'active' AND runbook_id = ANY($1) it was planned anew
// at every execution, and with no statistics yet (a fresh table) planned
// as a walk of every active invocation's entry in the timeout index.
const activeInvocationsSQL = `SELECT i.* FROM unnest($1::uuid[]) AS r(id), LATERAL (
	SELECT ` + invocationColumns + ` FROM invocation_records
	WHERE runbook_id = r.id AND status = 'active'
	OFFSET 0) i`

const finishInvocationsSQL = `
	UPDATE invocation_records SET status = $2, finished_at = now()
	WHERE invocation_id = ANY($1) AND status = 'active'`

const updateInvocationSQL = `
	UPDATE invocation_records SET
		external_id = coalesce($2, external_id),
		timeout_at = coalesce($3, timeout_at),
		context = coalesce($4::jsonb, context)
	WHERE invocation_id = $1`

// Invocation loads one invocation by correlation key.
func (s *Store) Invocation(ctx context.Context, correlationKey string) (driver.Invocation, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+invocationColumns+` FROM invocation_records WHERE correlation_key = $1`, correlationKey)
	if err != nil {
		return driver.Invocation{}, translate(err)
	}
	inv, err := pgx.CollectOneRow(rows, scanInvocation)
	return inv, translate(err)
}

// InvocationsOf returns every invocation of a runbook, oldest first.
func (s *Store) InvocationsOf(ctx context.Context, runbookID uuid.UUID) ([]driver.Invocation, error) {
	return viewReader{s.pool}.InvocationsOf(ctx, runbookID)
}

// InvocationsOf returns every invocation of a runbook, as
// Store.InvocationsOf does.
func (r viewReader) InvocationsOf(ctx context.Context, runbookID uuid.UUID) ([]driver.Invocation, error) {
	rows, err := r.q.Query(ctx, `SELECT `+invocationColumns+`,
			i.status = 'active' AND EXISTS (SELECT 1 FROM completion_notifications n
				WHERE n.correlation_key = i.correlation_key AND n.status = 'received'
				  AND (n.tenant IS NULL OR n.tenant = (SELECT r.tenant FROM runbooks r WHERE r.id = i.runbook_id)))
		FROM invocation_records i WHERE runbook_id = $1 ORDER BY parked_at, invocation_id`, runbookID)
	return collectNotified(rows, err)
}

// collectNotified reads the rows of a query of invocationColumns followed
// by whether the invocation's notification is in the inbox.
func collectNotified(rows pgx.Rows, err error) ([]driver.Invocation, error) {
	if err != nil {
		return nil, translate(err)
	}
	invs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Invocation, error) {
		var i driver.Invocation
		err := r.Scan(append(invocationFields(&i), &i.Notified)...)
		return i, err
	})
	return invs, translate(err)
}

// WaitTarget says which step, verb and plan a correlation key's wait is
// for, in one indexed look-up (the key is unique).
func (s *Store) WaitTarget(ctx context.Context, correlationKey string) (driver.WaitTarget, error) {
	return scanWaitTarget(s.pool.QueryRow(ctx, waitTargetSQL, correlationKey))
}
