package durable

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/runtime/driver"
)

// translate turns a driver error into the store's own, keeping the
// original in the chain for logs. It is the one place that knows pgx's
// error types.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", driver.ErrNotFound, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %w", driver.ErrConflict, err)
		case "42501": // insufficient_privilege
			return fmt.Errorf("%w: %w", driver.ErrForbidden, err)
		case "40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300": // serialization, deadlock, lock_not_available, shutdown, too many connections
			return fmt.Errorf("%w: %w", driver.ErrTransient, err)
		}
		return err
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: %w", driver.ErrTransient, err)
	}
	return err
}
