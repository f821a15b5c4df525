package driver

import "errors"

// StatementError is a statement's failure told twice: Message is fit for
// whoever reads the step's error (API callers, who must not learn table,
// constraint or index names, nor the SQLSTATE), and Err is the database's
// own error, for the daemon's log. Err is wrapped in one of the errors
// below when one fits.
type StatementError struct {
	Message string
	Err     error
}

func (e *StatementError) Error() string { return e.Message + ": " + e.Err.Error() }

// Unwrap gives the database's error, and the sentinel wrapping it.
func (e *StatementError) Unwrap() error { return e.Err }

// The store's errors. An implementation wraps its own errors in these;
// callers test for them with errors.Is.
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
