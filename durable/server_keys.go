package durable

import "context"

// DerivationKey reads the key runbook ids and correlation keys are derived
// under: made at random by migration 018, in rbd's own schema, where only
// rbd's role reads.
func (t *Tx) DerivationKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := t.tx.QueryRow(ctx, `SELECT key FROM server_keys WHERE name = 'derivation'`).Scan(&key)
	return key, translate(err)
}
