// Package handler is the contract between the engine and the Go code behind
// a verb: a Handler is called with a Call and returns a Result or an *Error.
// It is a leaf: the registry, the compiler and programs that embed the
// engine import it without the engine (docs/design/architecture.md).
package handler

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Handler is the Go code behind a verb.
type Handler interface {
	// Call performs the step. It returns Complete(result) when done, or,
	// for a durable handler, Parked(...) once the external work has
	// started; a failure is an *Error with a taxonomy code. Call runs
	// outside any transaction and may be called again for the same step
	// after a crash, always with the same IdempotencyKey.
	Call(ctx context.Context, c *Call) (Result, error)
}

// DryRunner is implemented by handlers that can say what they would do
// without doing it. In a dry run, a step with side effects calls DryRun if
// its handler has it, and is recorded as simulated otherwise.
type DryRunner interface {
	DryRun(ctx context.Context, c *Call) (Result, error)
}

// Canceller is implemented by durable handlers that can ask the outside
// world to stop the work they started: a cancelled runbook calls it, best
// effort, for each wait it cancels. sent is false when there was nothing
// to ask (the verb names no way to cancel).
type Canceller interface {
	Cancel(ctx context.Context, c *Call) (sent bool, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c *Call) (Result, error)

// Call calls f.
func (f HandlerFunc) Call(ctx context.Context, c *Call) (Result, error) { return f(ctx, c) }

// Call is everything a handler is told about the step it performs.
type Call struct {
	RunbookID uuid.UUID
	StepKey   string
	Verb      string
	Attempt   int
	// AttemptID names this attempt in the job ledger, its events and its
	// span (docs/design/semantics.md section 2): UUIDv5 of runbook, step and attempt.
	// The call's context carries the attempt's span context
	// (trace.SpanContextFromContext), for a handler that passes the trace
	// on; a compensation's or an escalation's carries the runbook's.
	AttemptID uuid.UUID
	// Args are the step's arguments, references and inputs resolved and
	// validated against the verb's input_schema.
	Args map[string]any
	// Params are the verb's static handler configuration.
	Params map[string]any
	// IdempotencyKey is the same on every attempt of the same logical
	// call; pass it to the system the handler calls.
	IdempotencyKey string
	// Seed is this attempt's deterministic seed (for a model's sampling,
	// say): the same on every replay of the attempt, new for the next
	// attempt and for a regeneration of a step that regenerates.
	Seed uint64
	// For durable handlers: the key the outside world notifies with, and
	// where it sends the notification.
	InvocationID   uuid.UUID
	CorrelationKey string
	CallbackURL    string
	// Execution is the verb's frozen execution block.
	Execution verbs.Execution
	DryRun    bool
	// ExternalID is what the external system called the work, when it
	// said (for Canceller).
	ExternalID string
}

// Result is a handler's success.
type Result struct {
	parked     bool
	value      any
	externalID string
	until      *time.Time
	// Usage is what the call used, when the handler says (WithUsage).
	Usage rbtype.Usage
}

// WithUsage is the result with what its call used: tokens, a model, a
// cost (docs/design/semantics.md section 3). The job ledger records it with the
// attempt.
func (r Result) WithUsage(u rbtype.Usage) Result {
	r.Usage = u
	return r
}

// Complete is a finished step with its result, which must marshal to JSON.
func Complete(value any) Result { return Result{value: value} }

// Parked says the external work has started and the step waits for a
// notification on its correlation key. externalID, when the external
// system gave one, is recorded for people to find the work.
func Parked(externalID string) Result { return Result{parked: true, externalID: externalID} }

// ParkedUntil says the step waits until a time; the runtime resumes it
// then (timer.sleep).
func ParkedUntil(t time.Time) Result { return Result{parked: true, until: &t} }

// IsParked reports whether the result is a park.
func (r Result) IsParked() bool { return r.parked }

// Value is a completed result's value.
func (r Result) Value() any { return r.value }

// ExternalID is what the external system called the work a park started,
// when it said.
func (r Result) ExternalID() string { return r.externalID }

// Until is when a park on a timer ends (ParkedUntil); nil for a park that
// waits for a notification.
func (r Result) Until() *time.Time { return r.until }

// Inliner is implemented by the handlers that may run inside an advance's
// transaction: they return at once, read nothing and change nothing but
// their result (docs/runtime.md). RunsInline says whether they do.
type Inliner interface {
	RunsInline() bool
}
