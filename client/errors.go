package client

import (
	"fmt"
	"strings"
	"time"

	"github.com/runbookdev/runbook/apitype"
)

// The API's error codes.
const (
	CodeMalformedJSON    apitype.ErrorCode = "MALFORMED_JSON"           // 400: the body is not the JSON the endpoint takes
	CodeInvalidRequest   apitype.ErrorCode = "INVALID_REQUEST"          // 400: well-formed but wrong
	CodeUnauthorized     apitype.ErrorCode = "UNAUTHORIZED"             // 401: no or wrong token, or a bad webhook signature
	CodeForbidden        apitype.ErrorCode = "FORBIDDEN"                // 403: the token lacks the role, or its scope a verb the plan names
	CodePolicyDenied     apitype.ErrorCode = "POLICY_DENIED"            // 403: the tenant's policy refuses a step of the plan
	CodeNotFound         apitype.ErrorCode = "NOT_FOUND"                // 404: no such runbook (or another tenant's), step or endpoint
	CodeMethodNotAllowed apitype.ErrorCode = "METHOD_NOT_ALLOWED"       // 405
	CodeRequestTimeout   apitype.ErrorCode = "REQUEST_TIMEOUT"          // 408: the body did not arrive in time
	CodeConflict         apitype.ErrorCode = "CONFLICT"                 // 409: does not fit the runbook's state, or a key reused
	CodeBodyTooLarge     apitype.ErrorCode = "BODY_TOO_LARGE"           // 413: over the daemon's --max-body
	CodeCompileFailed    apitype.ErrorCode = "COMPILE_FAILED"           // 422: the source does not compile; see Diagnostics
	CodeInvalidPlan      apitype.ErrorCode = "INVALID_PLAN"             // 422: a plan this daemon will not run; see Diagnostics
	CodeSchemaMismatch   apitype.ErrorCode = "SCHEMA_VALIDATION_FAILED" // 422: an input or a result does not fit its schema
	CodeUnavailable      apitype.ErrorCode = "UNAVAILABLE"              // 503: retry (the client does, by its RetryPolicy)
	CodeNotReady         apitype.ErrorCode = "NOT_READY"                // 503, from /readyz
	CodeInternal         apitype.ErrorCode = "INTERNAL"                 // 500: a bug in the daemon; its log has the details
	CodeLimitExceeded    apitype.ErrorCode = "LIMIT_EXCEEDED"           // 413, 422 or 429: past one of the daemon's limits; see Limit
)

// Error is an answer the daemon refused: the body {"error": {...}} of
// every error response (apitype.ErrorInfo: its code, message, the field
// at fault, the diagnostics of COMPILE_FAILED and INVALID_PLAN, the limit
// of LIMIT_EXCEEDED), with the HTTP status it came with. An answer that
// was not the API's JSON (a proxy's page, say) has the status's text as
// its code.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	apitype.ErrorInfo
	// RetryAfter is the wait the daemon asked for (Retry-After), when it
	// gave one: the client has already retried as its RetryPolicy allows.
	RetryAfter time.Duration
}

// Error renders the refusal on one line, its diagnostics on the lines
// after.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (HTTP %d): %s", e.Code, e.StatusCode, e.Message)
	for _, d := range e.Diagnostics {
		b.WriteString("\n")
		b.WriteString(d.Error())
	}
	return b.String()
}

// Is reports whether target is this error's code, so that
// errors.Is(err, client.CodeConflict) works.
func (e *Error) Is(target error) bool {
	code, ok := target.(apitype.ErrorCode)
	return ok && code == e.Code
}
