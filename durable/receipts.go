package durable

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

// Receipts returns the stored receipts for keys.
func (t *Tx) Receipts(ctx context.Context, keys []driver.ReceiptKey) (map[driver.ReceiptKey]driver.Receipt, error) {
	out := map[driver.ReceiptKey]driver.Receipt{}
	if len(keys) == 0 {
		return out, nil
	}
	handlers := make([]string, len(keys))
	idem := make([]string, len(keys))
	for i, k := range keys {
		handlers[i], idem[i] = k.Handler, k.IdempotencyKey
	}
	rows, err := t.tx.Query(ctx, `
		SELECT r.handler, r.idempotency_key, r.runbook_id, r.step_key, r.result, r.result_hash, r.created_at
		FROM action_receipts r
		JOIN unnest($1::text[], $2::text[]) AS u(h, k) ON r.handler = u.h AND r.idempotency_key = u.k`, handlers, idem)
	if err != nil {
		return nil, translate(err)
	}
	receipts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Receipt, error) {
		var rc driver.Receipt
		err := r.Scan(&rc.Handler, &rc.IdempotencyKey, &rc.RunbookID, &rc.StepKey, &rc.Result, &rc.ResultHash, &rc.CreatedAt)
		return rc, err
	})
	if err != nil {
		return nil, translate(err)
	}
	for _, rc := range receipts {
		out[driver.ReceiptKey{Handler: rc.Handler, IdempotencyKey: rc.IdempotencyKey}] = rc
	}
	return out, nil
}

const writeReceiptsSQL = `
	INSERT INTO action_receipts (handler, idempotency_key, runbook_id, step_key, result, result_hash, scope)
	SELECT h, k, r, s, res::jsonb, hash, nullif(sc, '')
	FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[]) AS u(h, k, r, s, res, hash, sc)
	ON CONFLICT (handler, idempotency_key) DO NOTHING`

func receiptArgs(receipts []driver.Receipt) []any {
	n := len(receipts)
	handlers, keys, steps, results, hashes := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	scopes := make([]string, n)
	runbooks := make([]uuid.UUID, n)
	for i, r := range receipts {
		handlers[i], keys[i], runbooks[i], steps[i], results[i], hashes[i] = r.Handler, r.IdempotencyKey, r.RunbookID, r.StepKey, string(r.Result), r.ResultHash
		scopes[i] = string(r.Scope)
	}
	return []any{handlers, keys, runbooks, steps, results, hashes, scopes}
}
