package durable

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// AppendMutation logs a change to a running runbook.
func (t *Tx) AppendMutation(ctx context.Context, m Mutation) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO runbook_mutations (runbook_id, actor, kind, payload) VALUES ($1, $2, $3, $4)`,
		m.RunbookID, m.Actor, m.Kind, string(jsonOrEmpty(m.Payload)))
	return translate(err)
}

// Mutations reads a runbook's change log, oldest first.
func (s *Store) Mutations(ctx context.Context, runbookID uuid.UUID) ([]Mutation, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, runbook_id, actor, kind, payload, at
		FROM runbook_mutations WHERE runbook_id = $1 ORDER BY id`, runbookID)
	if err != nil {
		return nil, translate(err)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Mutation, error) {
		var m Mutation
		err := r.Scan(&m.ID, &m.RunbookID, &m.Actor, &m.Kind, &m.Payload, &m.At)
		return m, err
	})
	return ms, translate(err)
}
