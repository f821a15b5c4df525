package durable

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The store's errors. Callers test for them with errors.Is.
var (
	// ErrNotFound: no row matched.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique constraint refused the write.
	ErrConflict = errors.New("conflict")
	// ErrTransient: a serialization failure, deadlock, lost connection or
	// similar; the operation may be retried as a whole.
	ErrTransient = errors.New("transient database error")
	// ErrSchemaTooNew: the database was migrated by a newer rbd.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrBadRequest: a request that cannot be run as asked (a CRUD call
	// naming a column its verb does not allow, a malformed page cursor).
	ErrBadRequest = errors.New("bad request")
	// ErrForbidden: the role lacks a privilege (pg.crud naming a table
	// its role was not granted). Retrying will not grant it.
	ErrForbidden = errors.New("permission denied")
)

// translate turns a driver error into the store's own, keeping the
// original in the chain for logs. It is the one place that knows pgx's
// error types.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %w", ErrConflict, err)
		case "42501": // insufficient_privilege
			return fmt.Errorf("%w: %w", ErrForbidden, err)
		case "40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300": // serialization, deadlock, lock_not_available, shutdown, too many connections
			return fmt.Errorf("%w: %w", ErrTransient, err)
		}
		return err
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: %w", ErrTransient, err)
	}
	return err
}
