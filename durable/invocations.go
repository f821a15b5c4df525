package durable

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

const invocationColumns = `invocation_id, step_id, runbook_id, attempt, correlation_key, status, parked_at,
	timeout_at, context, coalesce(external_id, ''), finished_at`

func scanInvocation(r pgx.CollectableRow) (Invocation, error) {
	var i Invocation
	err := r.Scan(&i.InvocationID, &i.StepID, &i.RunbookID, &i.Attempt, &i.CorrelationKey, &i.Status, &i.ParkedAt,
		&i.TimeoutAt, &i.Context, &i.ExternalID, &i.FinishedAt)
	return i, err
}

// InsertInvocation persists a park: the step's wait, active until its
// timeout. The ids are derived deterministically, so a repeat after a crash
// finds the record it already wrote; then it is returned with
// created=false.
//
// It also takes the correlation key's advisory lock, which
// InsertNotification takes too: whichever of a notification and its park
// commits first, the other sees it (see InsertNotification).
func (t *Tx) InsertInvocation(ctx context.Context, inv Invocation) (Invocation, bool, error) {
	if err := t.lockKeys(ctx, []int64{correlationLockKey(inv.CorrelationKey)}); err != nil {
		return Invocation{}, false, err
	}
	rows, err := t.tx.Query(ctx, insertInvocationSQL+` RETURNING `+invocationColumns, insertInvocationArgs(inv)...)
	if err != nil {
		return Invocation{}, false, translate(err)
	}
	created, err := pgx.CollectOneRow(rows, scanInvocation)
	if err == nil {
		return created, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Invocation{}, false, translate(err)
	}
	rows, err = t.tx.Query(ctx, `SELECT `+invocationColumns+` FROM invocation_records WHERE invocation_id = $1`, inv.InvocationID)
	if err != nil {
		return Invocation{}, false, translate(err)
	}
	existing, err := pgx.CollectOneRow(rows, scanInvocation)
	return existing, false, translate(err)
}

const insertInvocationSQL = `
	INSERT INTO invocation_records (invocation_id, step_id, runbook_id, attempt, correlation_key, timeout_at, context)
	VALUES ($1, $2, $3, $4, $5, $6, $7)
	ON CONFLICT (invocation_id) DO NOTHING`

func insertInvocationArgs(inv Invocation) []any {
	return []any{inv.InvocationID, inv.StepID, inv.RunbookID, inv.Attempt, inv.CorrelationKey, inv.TimeoutAt, jsonOrEmpty(inv.Context)}
}

const activeInvocationsSQL = `SELECT ` + invocationColumns + `
	FROM invocation_records WHERE status = 'active' AND runbook_id = ANY($1)`

const finishInvocationsSQL = `
	UPDATE invocation_records SET status = $2, finished_at = now()
	WHERE invocation_id = ANY($1) AND status = 'active'`

const updateInvocationSQL = `
	UPDATE invocation_records SET
		external_id = coalesce($2, external_id),
		timeout_at = coalesce($3, timeout_at),
		context = coalesce($4::jsonb, context)
	WHERE invocation_id = $1`

// ActiveInvocations returns the active invocations of runbooks.
func (t *Tx) ActiveInvocations(ctx context.Context, runbookIDs []uuid.UUID) ([]Invocation, error) {
	rows, err := t.tx.Query(ctx, activeInvocationsSQL, runbookIDs)
	if err != nil {
		return nil, translate(err)
	}
	invs, err := pgx.CollectRows(rows, scanInvocation)
	return invs, translate(err)
}

// Invocation loads one invocation by correlation key.
func (s *Store) Invocation(ctx context.Context, correlationKey string) (Invocation, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+invocationColumns+` FROM invocation_records WHERE correlation_key = $1`, correlationKey)
	if err != nil {
		return Invocation{}, translate(err)
	}
	inv, err := pgx.CollectOneRow(rows, scanInvocation)
	return inv, translate(err)
}

// FinishInvocations moves active invocations to a final status:
// completed, timed_out or cancelled.
func (t *Tx) FinishInvocations(ctx context.Context, ids []uuid.UUID, status string) error {
	_, err := t.tx.Exec(ctx, finishInvocationsSQL, ids, status)
	return translate(err)
}

// SetExternalID records the id the external system gave the work, best
// effort: it is for people reading the record.
func (t *Tx) SetExternalID(ctx context.Context, invocationID uuid.UUID, externalID string) error {
	_, err := t.tx.Exec(ctx, `UPDATE invocation_records SET external_id = $2 WHERE invocation_id = $1`, invocationID, externalID)
	return translate(err)
}

// UpdateInvocation records what the park learned: the external id, and
// for a timer the time it resumes itself, which becomes its timeout.
func (t *Tx) UpdateInvocation(ctx context.Context, invocationID uuid.UUID, externalID string, timeoutAt *time.Time, context_ json.RawMessage) error {
	_, err := t.tx.Exec(ctx, updateInvocationSQL, invocationID, nullString(externalID), timeoutAt, nullJSON(context_))
	return translate(err)
}

// InvocationsOf returns every invocation of a runbook, oldest first.
func (s *Store) InvocationsOf(ctx context.Context, runbookID uuid.UUID) ([]Invocation, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+invocationColumns+`
		FROM invocation_records WHERE runbook_id = $1 ORDER BY parked_at, invocation_id`, runbookID)
	if err != nil {
		return nil, translate(err)
	}
	invs, err := pgx.CollectRows(rows, scanInvocation)
	return invs, translate(err)
}
