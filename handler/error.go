package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/rbtype"
)

// Error is a handler failure with its taxonomy code.
type Error struct {
	Code    rbtype.ErrorCode
	Message string
	Err     error // the cause, if any; not shown to users
	// RetryAfter is how long the provider asked to wait before a retry
	// (HTTP Retry-After in seconds), and RetryAt the time it named (an
	// HTTP date). The retry waits that long when it is longer than its
	// backoff, never past its policy's cap; zero asks for nothing.
	RetryAfter time.Duration
	RetryAt    time.Time
}

// RetryAfterFrom is how long the provider asked to wait, from now: nothing
// for a time already past or a negative wait.
func (e *Error) RetryAfterFrom(now time.Time) time.Duration {
	wait := e.RetryAfter
	if !e.RetryAt.IsZero() {
		wait = e.RetryAt.Sub(now)
	}
	return max(wait, 0)
}

// Error renders the failure as CODE: message.
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf makes a handler failure.
func Errorf(code rbtype.ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Retryable reports whether the failure may be retried.
func (e *Error) Retryable() bool { return e.Code.Retryable() }

// Classify turns whatever a handler returned into a taxonomy error: its own
// code when it gave one, NETWORK_TIMEOUT when the call ran out its
// run_timeout, INTERNAL otherwise.
func Classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: rbtype.CodeNetworkTimeout, Message: "the call did not finish within its run_timeout", Err: err}
	}
	return &Error{Code: rbtype.CodeInternal, Message: err.Error(), Err: err}
}
