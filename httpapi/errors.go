package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// The error codes of the API's error bodies.
const (
	CodeMalformedJSON    = "MALFORMED_JSON"           // 400: the body is not the JSON asked for
	CodeInvalidRequest   = "INVALID_REQUEST"          // 400: well-formed, but wrong (bad inputs, bad id)
	CodeUnauthorized     = "UNAUTHORIZED"             // 401: no or wrong token, bad webhook signature
	CodeNotFound         = "NOT_FOUND"                // 404
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"       // 405
	CodeConflict         = "CONFLICT"                 // 409: does not fit the runbook's state, or a reused key
	CodeRequestTimeout   = "REQUEST_TIMEOUT"          // 408: the body did not arrive within the body timeout
	CodeBodyTooLarge     = "BODY_TOO_LARGE"           // 413
	CodeCompileFailed    = "COMPILE_FAILED"           // 422: the source has errors; see diagnostics
	CodeInvalidPlan      = "INVALID_PLAN"             // 422: a submitted plan that cannot be run
	CodeForbidden        = "FORBIDDEN"                // 403: the token lacks the role the endpoint needs, or its scope a verb the plan names
	CodePolicyDenied     = "POLICY_DENIED"            // 403: the tenant's policy refuses a step of the plan
	CodeSchemaMismatch   = "SCHEMA_VALIDATION_FAILED" // 422: an input or a notification's result does not fit its schema
	CodeUnavailable      = "UNAVAILABLE"              // 503: the database is unreachable or busy; retry
	CodeNotReady         = "NOT_READY"                // 503, from /readyz
	CodeInternal         = "INTERNAL"                 // 500: a bug; the log has the details
	CodeLimitExceeded    = "LIMIT_EXCEEDED"           // 413, 422 or 429: the request goes past one of the daemon's limits
)

// apiError is an error with the status and code to answer it with.
type apiError struct {
	status      int
	code        string
	message     string
	field       string
	diagnostics lang.Diagnostics
	// diagnosticsTotal is how many diagnostics there were, when more than
	// the answer carries.
	diagnosticsTotal int
	limit            *apitype.LimitInfo
	cause            error // logged, never sent
	// refused: a refusal for the client's fault or a limit, counted and
	// logged already (refusals.go), never again per request.
	refused bool
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// classify maps an error from the engine to its answer. The runtime's
// errors carry their meaning; anything else is the server's fault, and
// its text, which may name tables or hosts, stays in the log.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	ae = classifyEngine(err)
	if fe := (*runtime.FieldError)(nil); errors.As(err, &fe) {
		ae.field = fe.Field
	}
	return ae
}

// classifyEngine is classify for the engine's errors.
func classifyEngine(err error) *apiError {
	var ce *runtime.CompileError
	var le *machine.LimitError
	switch {
	case errors.As(err, &le):
		status := http.StatusUnprocessableEntity // too many steps
		if strings.HasSuffix(le.Name, "-bytes") {
			status = http.StatusRequestEntityTooLarge
		}
		return &apiError{status: status, code: CodeLimitExceeded, message: without(err, machine.ErrLimit),
			limit: &apitype.LimitInfo{Name: le.Name, Max: le.Max, Got: le.Got}}
	case errors.As(err, &ce):
		return &apiError{status: http.StatusUnprocessableEntity, code: CodeCompileFailed, message: ce.Error(), diagnostics: ce.Diagnostics}
	case errors.Is(err, rbtype.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: CodeNotFound, message: without(err, rbtype.ErrNotFound)}
	case errors.Is(err, rbtype.ErrConflict):
		return &apiError{status: http.StatusConflict, code: CodeConflict, message: without(err, rbtype.ErrConflict)}
	case errors.Is(err, rbtype.ErrSchema):
		return &apiError{status: http.StatusUnprocessableEntity, code: CodeSchemaMismatch, message: without(err, rbtype.ErrSchema)}
	case errors.Is(err, rbtype.ErrForbidden):
		return &apiError{status: http.StatusForbidden, code: CodeForbidden, message: without(err, rbtype.ErrForbidden)}
	case errors.Is(err, rbtype.ErrPolicyDenied):
		return &apiError{status: http.StatusForbidden, code: CodePolicyDenied, message: without(err, rbtype.ErrPolicyDenied)}
	case errors.Is(err, rbtype.ErrInvalid):
		return &apiError{status: http.StatusBadRequest, code: CodeInvalidRequest, message: without(err, rbtype.ErrInvalid)}
	case errors.Is(err, driver.ErrBadRequest):
		// The database's own text names tables and indexes; the log has it.
		return &apiError{status: http.StatusBadRequest, code: CodeInvalidRequest, cause: err,
			message: "a value in the request cannot be stored: a key too long, a number out of range, or text with a NUL character or invalid UTF-8"}
	case errors.Is(err, driver.ErrTransient), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, code: CodeUnavailable,
			message: "the database is unavailable or busy; retry", cause: err}
	}
	return &apiError{status: http.StatusInternalServerError, code: CodeInternal, message: "internal error; the daemon's log has the details", cause: err}
}

// DefaultMaxDiagnostics is how many diagnostics an error answer carries
// at most (100).
const DefaultMaxDiagnostics = 100

// capDiagnostics keeps the first --max-diagnostics of an answer's
// diagnostics, and says how many there were.
func (s *Server) capDiagnostics(ae *apiError) *apiError {
	if len(ae.diagnostics) <= s.cfg.MaxDiagnostics {
		return ae
	}
	capped := *ae
	capped.diagnosticsTotal = len(ae.diagnostics)
	capped.diagnostics = ae.diagnostics[:s.cfg.MaxDiagnostics]
	capped.message = fmt.Sprintf("%s (the first %d diagnostics of %d follow)", ae.message, s.cfg.MaxDiagnostics, len(ae.diagnostics))
	return &capped
}

// without drops the "conflict: " a sentinel put before the message: the
// error's code says it already.
func without(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}
