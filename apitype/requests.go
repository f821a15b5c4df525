package apitype

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// SubmitRequest is the body of POST /v1/runbooks: a source to compile with
// the daemon's verb catalogue, or a plan compiled beforehand by rbc.
type SubmitRequest struct {
	// IdempotencyKey, when set, is sent as the Idempotency-Key header (a
	// client's field; the body never carries it): a request sent again
	// with the same key returns the first one's answer.
	IdempotencyKey string `json:"-"`
	Source         string `json:"source,omitempty"`
	// Filename names the source, or the plan, in diagnostics.
	Filename string `json:"filename,omitempty"`
	// Plan is a frozen plan as `rbc compile` writes it. It runs only if it
	// matches its plan_hash and this daemon's catalogue, block for block
	// (compiler.ReadPlan); else 422 INVALID_PLAN with diagnostics.
	Plan   json.RawMessage `json:"plan,omitempty"`
	Inputs map[string]any  `json:"inputs,omitempty"`
	// Mode is "execute" (the default) or "dry_run".
	Mode rbtype.Mode `json:"mode,omitempty"`
	// Actor names who submitted, for the ledger.
	Actor string `json:"actor,omitempty"`
	// Name is the runbook's name for people; without it, the source
	// file's name without its extension. A label, not part of the
	// request: it does not make a repeat a new runbook.
	Name string `json:"name,omitempty"`
	// HoldOpen keeps the runbook in_progress after its steps finish, while
	// an agent still extends it, until POST .../close.
	HoldOpen bool `json:"hold_open,omitempty"`
	// Budget is the runbook's own budget: it may only lower the tenant's
	// runbook budget (400 otherwise, and for a measure below zero).
	Budget *rbtype.Budget `json:"budget,omitempty"`
	// NewLineage starts a fresh lineage. Without it, a submission of the
	// same plan and inputs as a runbook that failed (and no
	// Idempotency-Key) joins that runbook's lineage, so effects that
	// happened return their receipts; with it, the runbook's keys are its
	// own and those effects may happen again (docs/daemon.md, "Effects
	// once").
	NewLineage bool `json:"new_lineage,omitempty"`
}

// SubmitResponse names the runbook a submission started. Created is false
// when the submission repeated an earlier one (status 200, not 201), and
// Message then says so: nothing new runs.
type SubmitResponse struct {
	ID      uuid.UUID            `json:"id"`
	Status  rbtype.RunbookStatus `json:"status"`
	Created bool                 `json:"created"`
	Name    string               `json:"name,omitempty"`
	Message string               `json:"message,omitempty"`
	// Lineage is the lineage the runbook belongs to: a new one (its own
	// root, generation 0), or a failed runbook's that it joined.
	Lineage *LineageView `json:"lineage,omitempty"`
	// JoinedFailed is the failed runbook of the same plan and inputs whose
	// lineage this one joined: effects that happened return their
	// receipts.
	JoinedFailed *uuid.UUID `json:"joined_failed,omitempty"`
	// EffectsMayRepeat: new_lineage started a fresh lineage, so effects
	// that earlier runs of the same plan and inputs had may happen again.
	EffectsMayRepeat bool `json:"effects_may_repeat,omitempty"`
}

// AlreadySubmitted is the message of a submission that repeated an earlier
// one: the runbook it returns, and its status now.
func AlreadySubmitted(id uuid.UUID, status rbtype.RunbookStatus) string {
	return fmt.Sprintf("already submitted as %s (%s)", id, status)
}

// ListResponse is a page of runbooks, newest first. Next is the cursor
// for the following page (?after=), empty on the last.
type ListResponse struct {
	Runbooks []RunbookSummary `json:"runbooks"`
	Next     string           `json:"next,omitempty"`
}

// Event is one entry of a runbook's ledger. IDs grow with time; a reader
// continues after the last id it saw.
type Event struct {
	// ID is global, the cursor of ?after= and of the live stream; Seq
	// numbers the runbook's own events from 1.
	ID      int64            `json:"id"`
	Seq     int64            `json:"seq"`
	Type    rbtype.EventType `json:"type"`
	Step    string           `json:"step,omitempty"`
	Attempt int              `json:"attempt,omitempty"`
	Worker  string           `json:"worker,omitempty"`
	Data    json.RawMessage  `json:"data,omitempty"`
	At      time.Time        `json:"at"`
	// TraceID and CorrelationID are the runbook's (docs/design/semantics.md section
	// 2); a step's event also names its attempt (AttemptID, UUIDv5 of
	// runbook, step and attempt, the job ledger's attempt_id) and the
	// attempt's span (SpanID). They are derived when the event is read,
	// not stored with it.
	TraceID       string     `json:"trace_id"`
	CorrelationID string     `json:"correlation_id"`
	SpanID        string     `json:"span_id,omitempty"`
	AttemptID     *uuid.UUID `json:"attempt_id,omitempty"`
}

// EventsResponse is a page of a runbook's ledger, oldest first. When it
// holds as many events as the limit, more may follow: ask again with
// ?after= the last id.
type EventsResponse struct {
	Events []Event `json:"events"`
}

// StreamEnd is the data of the last event of a live stream, named "end":
// the runbook has finished and nothing more will be written to its ledger.
type StreamEnd struct {
	Status rbtype.RunbookStatus `json:"status"`
}

// CancelRequest is the optional body of POST .../cancel.
type CancelRequest struct {
	By string `json:"by,omitempty"`
	// Compensate, when false, leaves what the completed steps did as it
	// is; left out, the cancel undoes it (their compensations run).
	Compensate *bool `json:"compensate,omitempty"`
}

// CancelResponse is the runbook's status after a cancel (or a close).
type CancelResponse struct {
	ID     uuid.UUID            `json:"id"`
	Status rbtype.RunbookStatus `json:"status"`
}

// CloseRequest is the optional body of POST /v1/runbooks/{id}/close.
type CloseRequest struct {
	By string `json:"by,omitempty"`
}

// ResolveRequest is the body of POST .../steps/{key}/resolve: what to do
// with an escalated step ("complete" with a result, "retry" or "fail").
type ResolveRequest struct {
	Action string          `json:"action"`
	Result json.RawMessage `json:"result,omitempty"`
	By     string          `json:"by,omitempty"`
}

// ResolveResponse confirms a resolution.
type ResolveResponse struct {
	ID     uuid.UUID `json:"id"`
	Step   string    `json:"step"`
	Action string    `json:"action"`
}

// RetryRequest is the optional body of POST /v1/runbooks/{id}/retry:
// the steps to retry (all failed, skipped, cancelled and escalated ones
// when empty) and who asks.
type RetryRequest struct {
	Steps []string `json:"steps,omitempty"`
	By    string   `json:"by,omitempty"`
	// Execute runs a draft_only runbook for real: it becomes an execute
	// runbook and its DRAFT_ONLY steps (or those named) run.
	Execute bool `json:"execute,omitempty"`
}

// RetryResponse lists the steps a retry sent back to pending.
type RetryResponse struct {
	ID     uuid.UUID            `json:"id"`
	Status rbtype.RunbookStatus `json:"status"`
	Steps  []string             `json:"steps"`
}

// RegenerateRequest is the optional body of POST
// /v1/runbooks/{id}/regenerate: inputs that override the parent's, name by
// name, and who asks. An Idempotency-Key header dedupes it as it does a
// submission.
type RegenerateRequest struct {
	// IdempotencyKey, when set, is sent as the Idempotency-Key header (a
	// client's field; the body never carries it): a request sent again
	// with the same key returns the first one's answer.
	IdempotencyKey string         `json:"-"`
	Inputs         map[string]any `json:"inputs,omitempty"`
	By             string         `json:"by,omitempty"`
}

// RegenerateResponse names the runbook a regeneration started and its
// lineage. Created is false when the request repeated an earlier one
// (status 200, not 201).
type RegenerateResponse struct {
	ID      uuid.UUID            `json:"id"`
	Status  rbtype.RunbookStatus `json:"status"`
	Created bool                 `json:"created"`
	Lineage LineageView          `json:"lineage"`
}

// DecisionRequest is the body of POST .../steps/{key}/approve and /reject,
// which may be empty ({}): the decision is recorded under the token's
// actor. By, when it names someone else, is kept as a note beside it; for
// a token whose line names no actor, By is who decided (else its
// token-<n>).
type DecisionRequest struct {
	By      string `json:"by,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// DecisionResponse confirms a gate decision.
type DecisionResponse struct {
	ID       uuid.UUID           `json:"id"`
	Step     string              `json:"step"`
	Decision rbtype.GateDecision `json:"decision"`
	// By is who the ledger records as deciding: the token's actor when
	// its line names one, else the request's "by" (or the token's actor
	// when it gave none).
	By string `json:"by"`
}

// ExtendRequest is the body of POST /v1/runbooks/{id}/steps: more source
// compiled against the runbook's frozen plan, and inputs the new calls use
// that the runbook does not have yet.
type ExtendRequest struct {
	Source   string         `json:"source"`
	Filename string         `json:"filename,omitempty"`
	Inputs   map[string]any `json:"inputs,omitempty"`
	Actor    string         `json:"actor,omitempty"`
}

// ExtendResponse lists the steps an extension added and the runbook's new
// version.
type ExtendResponse struct {
	ID      uuid.UUID `json:"id"`
	Steps   []string  `json:"steps"`
	Version int       `json:"version"`
}

// NotificationRequest is the body of POST /v1/notifications.
type NotificationRequest struct {
	CorrelationKey string `json:"correlation_key"`
	// Status is "completed", "failed" or "heartbeat".
	Status rbtype.NotificationOutcome `json:"status"`
	Result json.RawMessage            `json:"result,omitempty"`
	Error  *ErrorView                 `json:"error,omitempty"`
	// Extend, with status "heartbeat", moves the wait's timeout to now
	// plus this ISO 8601 duration, within the verb's max_park.
	Extend string `json:"extend,omitempty"`
	// Usage is what the external work used (docs/design/semantics.md section 3),
	// added to the ledger row of the attempt the notification resumes.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is what a step's work used, as a notification reports it: the
// fields of the Rbd-Usage header.
type Usage = rbtype.Usage

// NotificationResponse says what became of a notification: "accepted"
// (202) or "duplicate" (200).
type NotificationResponse struct {
	Status string `json:"status"`
	// TimeoutAt is the wait's timeout after a heartbeat.
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`
}

// ErrorCode is the code of an API error (docs/reference/http-api.md,
// "Errors"). It is an error itself, so that errors.Is(err, code) asks
// whether err is the daemon's refusal with that code.
type ErrorCode string

// Error makes an ErrorCode usable as the target of errors.Is.
func (c ErrorCode) Error() string { return string(c) }

// ErrorBody is every error response.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is an error's code, message and, for a source that did not
// compile, its diagnostics: the first --max-diagnostics of them, with
// DiagnosticsTotal saying how many there were when that is more. A
// request refused by a limit says which in Limit.
type ErrorInfo struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// Field names the request's field at fault, when one is (a schedule's
	// cron, timezone, catch_up, source, ...).
	Field            string       `json:"field,omitempty"`
	Diagnostics      []Diagnostic `json:"diagnostics,omitempty"`
	DiagnosticsTotal int          `json:"diagnostics_total,omitempty"`
	Limit            *LimitInfo   `json:"limit,omitempty"`
}

// LimitInfo names the limit a request went past: its flag, what it
// allows, and what the request would have made.
type LimitInfo struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
	Got  int    `json:"got"`
}

// Health is the body of /healthz and of a ready /readyz.
type Health struct {
	Status string `json:"status"`
}

// CostsResponse is GET /v1/costs: what attempts used, by the group asked
// for, in the group's order.
type CostsResponse struct {
	GroupBy string `json:"group_by"`
	Costs   []Cost `json:"costs"`
}

// ScheduleRequest is the body of POST /v1/schedules
// (docs/design/semantics.md section 14): a cron expression in a time zone,
// and the source or plan each tick submits with its inputs.
type ScheduleRequest struct {
	Name string `json:"name"`
	// Cron has five fields or is a name such as @hourly; Timezone is an
	// IANA time zone (default UTC).
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone,omitempty"`
	Source   string          `json:"source,omitempty"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Filename string          `json:"filename,omitempty"`
	Inputs   map[string]any  `json:"inputs,omitempty"`
	Mode     rbtype.Mode     `json:"mode,omitempty"`
	// Overlap is skip (the default) or allow; CatchUp none (the default)
	// or latest.
	Overlap rbtype.Overlap `json:"overlap,omitempty"`
	CatchUp rbtype.CatchUp `json:"catch_up,omitempty"`
}

// SchedulePatchRequest is the body of PATCH /v1/schedules/{id}: each
// field given replaces the schedule's; {"paused": true} pauses it and
// {"paused": false} resumes it.
type SchedulePatchRequest struct {
	Paused   *bool           `json:"paused,omitempty"`
	Name     *string         `json:"name,omitempty"`
	Cron     *string         `json:"cron,omitempty"`
	Timezone *string         `json:"timezone,omitempty"`
	Source   *string         `json:"source,omitempty"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Filename *string         `json:"filename,omitempty"`
	Inputs   map[string]any  `json:"inputs,omitempty"`
	Mode     *rbtype.Mode    `json:"mode,omitempty"`
	Overlap  *rbtype.Overlap `json:"overlap,omitempty"`
	CatchUp  *rbtype.CatchUp `json:"catch_up,omitempty"`
}

// ScheduleList is GET /v1/schedules.
type ScheduleList struct {
	Schedules []ScheduleView `json:"schedules"`
}

// ScheduleDeleted is DELETE /v1/schedules/{id}.
type ScheduleDeleted struct {
	ID      uuid.UUID `json:"id"`
	Deleted bool      `json:"deleted"`
}
