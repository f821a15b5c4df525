package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/runbookdev/runbook/rbtype"
)

// Error is a handler failure with its taxonomy code.
type Error struct {
	Code    rbtype.ErrorCode
	Message string
	Err     error // the cause, if any; not shown to users
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf makes a handler failure.
func Errorf(code rbtype.ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Retryable reports whether the failure may be retried.
func (e *Error) Retryable() bool { return e.Code.Retryable() }

// classify turns whatever a handler returned into a taxonomy error: its own
// code when it gave one, NETWORK_TIMEOUT when the call ran out its
// run_timeout, INTERNAL otherwise.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: rbtype.CodeNetworkTimeout, Message: "the call did not finish within its run_timeout", Err: err}
	}
	return &Error{Code: rbtype.CodeInternal, Message: err.Error(), Err: err}
}
