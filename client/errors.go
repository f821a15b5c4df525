package client

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrorCode is the code of an API error (docs/reference/http-api.md,
// "Errors"). It is an error itself, so that errors.Is(err, CodeNotFound)
// asks whether err is the daemon's NOT_FOUND.
type ErrorCode string

// Error makes an ErrorCode usable as the target of errors.Is.
func (c ErrorCode) Error() string { return string(c) }

// The API's error codes.
const (
	CodeMalformedJSON    ErrorCode = "MALFORMED_JSON"           // 400: the body is not the JSON the endpoint takes
	CodeInvalidRequest   ErrorCode = "INVALID_REQUEST"          // 400: well-formed but wrong
	CodeUnauthorized     ErrorCode = "UNAUTHORIZED"             // 401: no or wrong token, or a bad webhook signature
	CodeForbidden        ErrorCode = "FORBIDDEN"                // 403: the token lacks the role, or its scope a verb the plan names
	CodePolicyDenied     ErrorCode = "POLICY_DENIED"            // 403: the tenant's policy refuses a step of the plan
	CodeNotFound         ErrorCode = "NOT_FOUND"                // 404: no such runbook (or another tenant's), step or endpoint
	CodeMethodNotAllowed ErrorCode = "METHOD_NOT_ALLOWED"       // 405
	CodeRequestTimeout   ErrorCode = "REQUEST_TIMEOUT"          // 408: the body did not arrive in time
	CodeConflict         ErrorCode = "CONFLICT"                 // 409: does not fit the runbook's state, or a key reused
	CodeBodyTooLarge     ErrorCode = "BODY_TOO_LARGE"           // 413: over the daemon's --max-body
	CodeCompileFailed    ErrorCode = "COMPILE_FAILED"           // 422: the source does not compile; see Diagnostics
	CodeInvalidPlan      ErrorCode = "INVALID_PLAN"             // 422: a plan this daemon will not run; see Diagnostics
	CodeSchemaMismatch   ErrorCode = "SCHEMA_VALIDATION_FAILED" // 422: an input or a result does not fit its schema
	CodeUnavailable      ErrorCode = "UNAVAILABLE"              // 503: retry (the client does, by its RetryPolicy)
	CodeNotReady         ErrorCode = "NOT_READY"                // 503, from /readyz
	CodeInternal         ErrorCode = "INTERNAL"                 // 500: a bug in the daemon; its log has the details
	CodeLimitExceeded    ErrorCode = "LIMIT_EXCEEDED"           // 413, 422 or 429: past one of the daemon's limits; see Limit
)

// Error is an answer the daemon refused: the body {"error": {...}} of
// every error response, with the HTTP status it came with.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int `json:"-"`
	// Code says which refusal it is; an answer that was not the API's
	// JSON (a proxy's page, say) has the status's text as its code.
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// Field names the request's field at fault, when one is (a
	// schedule's cron, timezone, catch_up, source, ...).
	Field string `json:"field,omitempty"`
	// Diagnostics explain COMPILE_FAILED and INVALID_PLAN, in the shape of
	// `rbc lint --format json`.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// DiagnosticsTotal is how many diagnostics there were, when the daemon
	// sent only the first of them (its --max-diagnostics).
	DiagnosticsTotal int `json:"diagnostics_total,omitempty"`
	// Limit names the limit a LIMIT_EXCEEDED refusal went past.
	Limit *Limit `json:"limit,omitempty"`
	// RetryAfter is the wait the daemon asked for (Retry-After), when it
	// gave one: the client has already retried as its RetryPolicy allows.
	RetryAfter time.Duration `json:"-"`
}

// Error renders the refusal on one line, its diagnostics on the lines
// after.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (HTTP %d): %s", e.Code, e.StatusCode, e.Message)
	for _, d := range e.Diagnostics {
		b.WriteString("\n")
		b.WriteString(d.String())
	}
	return b.String()
}

// Is reports whether target is this error's code, so that
// errors.Is(err, client.CodeConflict) works.
func (e *Error) Is(target error) bool {
	code, ok := target.(ErrorCode)
	return ok && code == e.Code
}

// Limit is one of the daemon's limits that a request went past: its
// flag's name (max-steps, max-source-bytes, ...), what it allows, and
// what the request would have made.
type Limit struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
	Got  int    `json:"got"`
}

// Diagnostic is one problem in a source or a plan, as `rbc lint --format
// json` and the daemon's 422 answers give it (docs/reference/language.md,
// "Diagnostics").
type Diagnostic struct {
	Severity string    `json:"severity"`
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Range    Range     `json:"range"`
	Related  []Related `json:"related,omitempty"`
	// Suggestions are the close names of a did-you-mean.
	Suggestions []string `json:"suggestions,omitempty"`
	// Notes explain the diagnostic without a place of their own.
	Notes []string `json:"notes,omitempty"`
	// Fixes are machine-applicable repairs: edits that, applied together,
	// make the change the fix's message describes.
	Fixes []Fix `json:"fixes,omitempty"`
}

// Headline is the message and, when there are suggestions, "(did you
// mean ...?)", as rbc prints a diagnostic's first line.
func (d Diagnostic) Headline() string {
	if len(d.Suggestions) == 0 {
		return d.Message
	}
	quoted := make([]string, len(d.Suggestions))
	for i, n := range d.Suggestions {
		quoted[i] = strconv.Quote(n)
	}
	last := len(quoted) - 1
	names := quoted[last]
	if last > 0 {
		names = strings.Join(quoted[:last], ", ") + " or " + names
	}
	return d.Message + " (did you mean " + names + "?)"
}

// Text is the headline and each note, joined by "; ": the whole
// diagnostic on one line.
func (d Diagnostic) Text() string {
	return strings.Join(append([]string{d.Headline()}, d.Notes...), "; ")
}

// String renders the diagnostic as file:line:column: severity[code]: text.
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s[%s]: %s", d.Range.File, d.Range.Start.Line, d.Range.Start.Column, d.Severity, d.Code, d.Text())
}

// Range is a span of a source: where it starts and where it ends.
type Range struct {
	File  string `json:"file"`
	Start Pos    `json:"start"`
	End   Pos    `json:"end"`
}

// Pos is a place in a source: its line and column (from 1) and its byte
// offset (from 0), which is what edits are applied at.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// Related is another place that explains a diagnostic.
type Related struct {
	Range   Range  `json:"range"`
	Message string `json:"message"`
}

// Fix is a machine-applicable repair of a diagnostic.
type Fix struct {
	Message string `json:"message"`
	Edits   []Edit `json:"edits"`
}

// Edit replaces a range of the source with text.
type Edit struct {
	Range Range  `json:"range"`
	Text  string `json:"text"`
}
