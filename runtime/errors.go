package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// The error taxonomy of RUNTIME.md. A handler fails with a code; the code
// decides whether the step is retried.
const (
	CodeNetworkTimeout         = "NETWORK_TIMEOUT"
	CodeRateLimit              = "RATE_LIMIT"
	CodeTemporaryProviderError = "TEMPORARY_PROVIDER_ERROR"
	CodeTransientDBLock        = "TRANSIENT_DB_LOCK"
	CodeDependencyUnavailable  = "DEPENDENCY_UNAVAILABLE"
	CodePolicyDenied           = "POLICY_DENIED"
	CodeInvalidInput           = "INVALID_INPUT"
	CodeSchemaValidationFailed = "SCHEMA_VALIDATION_FAILED"
	CodeMissingRequiredContext = "MISSING_REQUIRED_CONTEXT"
	CodeAuthForbidden          = "AUTH_FORBIDDEN"
	CodeInternal               = "INTERNAL" // unclassified: a handler's own bug, say
	CodeParkTimeout            = "PARK_TIMEOUT"
	CodeCancelled              = "CANCELLED"
)

// retryable are the codes that send a step to failed_retryable while it
// has attempts left. Anything else is final.
var retryable = []string{
	CodeNetworkTimeout, CodeRateLimit, CodeTemporaryProviderError, CodeTransientDBLock, CodeDependencyUnavailable,
}

// IsRetryable reports whether a failure with this code may be retried.
func IsRetryable(code string) bool { return slices.Contains(retryable, code) }

// Error is a handler failure with its taxonomy code.
type Error struct {
	Code    string
	Message string
	Err     error // the cause, if any; not shown to users
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf makes a handler failure.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Retryable reports whether the failure may be retried.
func (e *Error) Retryable() bool { return IsRetryable(e.Code) }

// classify turns whatever a handler returned into a taxonomy error: its own
// code when it gave one, NETWORK_TIMEOUT when the call ran out its
// run_timeout, INTERNAL otherwise.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeNetworkTimeout, Message: "the call did not finish within its run_timeout", Err: err}
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Err: err}
}
