package durable

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

// viewReader reads what a runbook's view shows through q: the pool, each
// read on its own, or a snapshot's transaction (ReadView), all in one.
type viewReader struct{ q querier }

// ReadView runs fn with reads that all see one snapshot of the database:
// a read-only transaction at REPEATABLE READ, so that a view never shows
// a runbook's status from one moment beside its steps, cost or outcomes
// from another (docs/daemon.md, "Get"). Read-only transactions
// at REPEATABLE READ take no locks and are never refused for a
// serialization failure, on a primary or a standby alike.
func (s *Store) ReadView(ctx context.Context, fn func(driver.ViewReader) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit, a no-op
	if err := fn(viewReader{tx}); err != nil {
		return err
	}
	return translate(tx.Commit(ctx))
}
