package durable

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// ReceiptKey names a receipt: a handler (or verb) and an idempotency key.
type ReceiptKey struct {
	Handler        string
	IdempotencyKey string
}

// Receipts returns the stored receipts for keys.
func (t *Tx) Receipts(ctx context.Context, keys []ReceiptKey) (map[ReceiptKey]Receipt, error) {
	out := map[ReceiptKey]Receipt{}
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
	receipts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Receipt, error) {
		var rc Receipt
		err := r.Scan(&rc.Handler, &rc.IdempotencyKey, &rc.RunbookID, &rc.StepKey, &rc.Result, &rc.ResultHash, &rc.CreatedAt)
		return rc, err
	})
	if err != nil {
		return nil, translate(err)
	}
	for _, rc := range receipts {
		out[ReceiptKey{rc.Handler, rc.IdempotencyKey}] = rc
	}
	return out, nil
}

// WriteReceipts stores receipts; a receipt that exists is kept as it was.
func (t *Tx) WriteReceipts(ctx context.Context, receipts []Receipt) error {
	if len(receipts) == 0 {
		return nil
	}
	var b pgx.Batch
	for _, r := range receipts {
		b.Queue(`INSERT INTO action_receipts (handler, idempotency_key, runbook_id, step_key, result, result_hash)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (handler, idempotency_key) DO NOTHING`,
			r.Handler, r.IdempotencyKey, r.RunbookID, r.StepKey, string(r.Result), r.ResultHash)
	}
	return translate(t.tx.SendBatch(ctx, &b).Close())
}
