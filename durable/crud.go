package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/driver"
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
	if r.DryRun {
		return p.dryRun(ctx, stmt)
	}
	return runCRUD(ctx, p.pool, stmt)
}

// runCRUD runs a statement and collects its rows.
func runCRUD(ctx context.Context, q querier, stmt crudStatement) ([]map[string]any, error) {
	rows, err := q.Query(ctx, stmt.sql, stmt.args...)
	if err != nil {
		return nil, crudError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		return nil, crudError(err)
	}
	return out, nil
}

// dryRun runs a statement in a transaction it always rolls back: the rows
// it would return, with every constraint checked, and nothing changed.
func (p *CRUDPool) dryRun(ctx context.Context, stmt crudStatement) ([]map[string]any, error) {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return nil, crudError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // the point of a dry run; its error changes nothing
	return runCRUD(ctx, tx, stmt)
}

// crudError turns the database's refusal of a pg.crud statement into a
// driver.StatementError: a message that names no table, column,
// constraint or SQLSTATE (the step's error reaches API callers), and the
// original for the log. A refusal the same call would meet again (a bad
// value, a broken constraint, a table or column that is not there) is
// ErrBadRequest, so the step fails without retrying.
func crudError(err error) error {
	err = translate(err)
	msg := "the database could not run the statement"
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, driver.ErrTransient):
		msg = "the database is busy or unreachable"
	case errors.Is(err, driver.ErrForbidden):
		msg = "pg.crud's database role is not allowed this on the table"
	case errors.Is(err, driver.ErrConflict):
		msg = "a row with the same unique value exists already"
	case errors.Is(err, driver.ErrBadRequest):
		msg = "a value cannot be stored: out of range, too long, or text holding a NUL character or invalid UTF-8"
	case errors.As(err, &pgErr):
		switch pgErr.Code[:2] {
		case "22": // data exception
			msg = "a value does not fit its column's type"
		case "23": // integrity constraint violation
			msg = "the row breaks a rule of the table: a value missing, out of bounds, or naming a row that is not there"
		case "42": // syntax error or access rule violation
			msg = "the table, or a column the verb names, does not exist or does not fit the statement"
		default:
			return &driver.StatementError{Message: msg, Err: err}
		}
		err = fmt.Errorf("%w: %w", driver.ErrBadRequest, err)
	}
	return &driver.StatementError{Message: msg, Err: err}
}
