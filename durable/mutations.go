package durable

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

// appendMutationSQL logs a change to a running runbook.
const appendMutationSQL = `INSERT INTO runbook_mutations (runbook_id, actor, kind, payload) VALUES ($1, $2, $3, $4)`

// Mutations reads a runbook's change log, oldest first.
func (s *Store) Mutations(ctx context.Context, runbookID uuid.UUID) ([]driver.Mutation, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, runbook_id, actor, kind, payload, at
		FROM runbook_mutations WHERE runbook_id = $1 ORDER BY id`, runbookID)
	if err != nil {
		return nil, translate(err)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Mutation, error) {
		var m driver.Mutation
		err := r.Scan(&m.ID, &m.RunbookID, &m.Actor, &m.Kind, &m.Payload, &m.At)
		return m, err
	})
	return ms, translate(err)
}
