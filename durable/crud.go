package durable

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/runtime/driver"
)

var _ driver.CRUDExecutor = (*CRUDPool)(nil)

// CRUD runs one pg.crud operation. The caller (the pg.crud handler) has
// checked the names against registry's rule, which keeps rbd's own tables
// out; here they are quoted, so that a name is only ever a name, and the
// values are bound as parameters.
func (p *CRUDPool) CRUD(ctx context.Context, r driver.CRUDRequest) ([]map[string]any, error) {
	stmt, err := buildCRUD(r)
	if err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, stmt.sql, stmt.args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}
