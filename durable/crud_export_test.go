package durable

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// RelationsForTest lists, sorted, every table, view and sequence in the
// store's schema, as the database has them.
func (s *Store) RelationsForTest(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
		ORDER BY c.relname`, s.config.Schema)
	if err != nil {
		return nil, translate(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, translate(err)
}
