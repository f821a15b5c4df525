package durable

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/driver"
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
		case "22P05", "22021", "22003", "22001", "54000":
			// untranslatable_character (a NUL in jsonb),
			// character_not_in_repertoire (a NUL or bad UTF-8 in text),
			// numeric_value_out_of_range, string_data_right_truncation,
			// program_limit_exceeded (an index row too large): a value
			// the caller sent that cannot be stored. The API checks for
			// these at the door; this is the backstop.
			return fmt.Errorf("%w: %w", driver.ErrBadRequest, err)
		case "40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300": // serialization, deadlock, lock_not_available, shutdown, too many connections
			return fmt.Errorf("%w: %w", driver.ErrTransient, err)
		case "25006":
			// read_only_sql_transaction: the server is a standby, or a
			// primary being demoted. A new connection with
			// target_session_attrs=read-write finds the new primary
			// (docs/scaling.md, "Across a failover").
			return fmt.Errorf("%w: %w", driver.ErrTransient, err)
		}
		if strings.HasPrefix(pgErr.Code, "08") { // connection_exception and its kinds
			return fmt.Errorf("%w: %w", driver.ErrTransient, err)
		}
		return err
	}
	if connectionLost(err) {
		return fmt.Errorf("%w: %w", driver.ErrTransient, err)
	}
	return err
}

// connectionLost reports an error of the connection rather than of the
// statement: the server is down, restarting or unreachable, and the same
// request may succeed later. With PostgreSQL stopped, a pooled connection
// fails with a broken pipe or an unexpected EOF ("failed to receive
// message") and a new one with "connection refused" (or a missing unix
// socket), none of which pgconn calls safe to retry; they are transient
// all the same, for the caller answers 503 and the client retries. A
// ConnectError carrying the server's own refusal (a bad password) has
// been sorted by its SQLSTATE before this.
func connectionLost(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
