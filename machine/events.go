package machine

import (
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// The data of the ledger's events, by type. Their JSON is what API
// clients read; fields left empty are left out.

// StepReadyData says why a step became ready other than by its
// predecessors completing.
type StepReadyData struct {
	// Reclaimed: its worker died or gave it up, and it runs again.
	Reclaimed bool `json:"reclaimed,omitempty"`
	// Retry: its backoff after a retryable failure is over.
	Retry bool `json:"retry,omitempty"`
}

// StepSucceededData says how a step completed other than by its handler
// returning.
type StepSucceededData struct {
	// Receipt: a stored receipt for its idempotency key was its result.
	Receipt bool `json:"receipt,omitempty"`
	// Cache is "hit" when a cached result was its result, and Source says
	// where that result came from (docs/design/semantics.md section 4).
	Cache  string       `json:"cache,omitempty"`
	Source *CacheSource `json:"source,omitempty"`
	// Simulated: a dry run recorded it without calling its handler.
	Simulated bool `json:"simulated,omitempty"`
	// Reason says why it was simulated, when not because of side effects.
	Reason string `json:"reason,omitempty"`
	// Instances is, for a for-each's template, how many instances' results
	// its result lists.
	Instances *int `json:"instances,omitempty"`
	// Provenance is "default" for a result no call produced: the
	// :timeout-result a wait took (timeout_result.go).
	Provenance string `json:"provenance,omitempty"`
}

// StepReclaimedData is the data of STEP_RECLAIMED. SuspectCommit says
// that the call may have taken effect without its result being recorded:
// an external_call step whose call was cut off (its worker died, or gave
// the call up at a shutdown) has no receipt, since a receipt is written
// with the completion. Audit fails closed: the call is repeated with the
// same idempotency key, which the provider must honour, and the ledger
// says so first.
type StepReclaimedData struct {
	SuspectCommit bool `json:"suspect_commit"`
}

// StepFailedData is a failure's code and message (STEP_FAILED,
// COMPENSATION_FAILED).
type StepFailedData struct {
	Code    rbtype.ErrorCode `json:"code"`
	Message string           `json:"message"`
	// NotRetried says why a retryable code was not retried when the
	// reason is not the attempts: "no_idempotency_key", an external call
	// whose repeat could act twice (docs/design/semantics.md section 12).
	NotRetried string `json:"not_retried,omitempty"`
}

// RetryScheduledData is a retryable failure and when the step runs again.
type RetryScheduledData struct {
	Code          rbtype.ErrorCode `json:"code"`
	Message       string           `json:"message"`
	NextAttemptAt time.Time        `json:"next_attempt_at"`
	DelayMS       int64            `json:"delay_ms"`
	// RetryAfterMS is the provider's Retry-After, capped by the code's
	// policy, when it asked for one (docs/design/semantics.md section 12).
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

// StepParkedData is what a parked step waits for.
type StepParkedData struct {
	CorrelationKey string    `json:"correlation_key"`
	TimeoutAt      time.Time `json:"timeout_at"`
	// AttachedTo is the runbook whose open wait under the same key an
	// attached twin waits on (twins.go); no call was made.
	AttachedTo *uuid.UUID `json:"attached_to,omitempty"`
}

// StepResumedData is what resumed a parked step.
type StepResumedData struct {
	CorrelationKey string `json:"correlation_key"`
	// Outcome is the notification's: completed or failed.
	Outcome rbtype.NotificationOutcome `json:"outcome,omitempty"`
	// Timer: a timer.sleep reached its time.
	Timer bool `json:"timer,omitempty"`
}

// StepTimedOutData is a park that ran out its time.
type StepTimedOutData struct {
	CorrelationKey string           `json:"correlation_key"`
	TimeoutAt      time.Time        `json:"timeout_at"`
	OnTimeout      rbtype.OnTimeout `json:"on_timeout"`
}

// StepSkippedData names the predecessor that can never complete.
type StepSkippedData struct {
	Because string            `json:"because,omitempty"`
	Status  rbtype.StepStatus `json:"status,omitempty"`
	// Reason is DRAFT_ONLY for a step a draft_only runbook does not run,
	// CONDITION_FALSE for a step whose condition was false, NO_FAILURE for
	// a failure hook of a runbook that completed (Because and Status are
	// then empty: nothing upstream stopped it), and UPSTREAM_SKIPPED for a
	// step that reads the result of Because, skipped for one of those.
	Reason rbtype.ErrorCode `json:"reason,omitempty"`
	// Aborted: the runbook stopped because Because failed under
	// on_failure: abort (also the data of a STEP_CANCELLED it causes).
	Aborted bool `json:"aborted,omitempty"`
}

// GateRequestedData names the gate a step waits at.
type GateRequestedData struct {
	Gate rbtype.Gate `json:"gate"`
	// When is the step's :gate-when, which held when it became ready
	// (gate_when.go); empty for a gate that always applies.
	When string `json:"when,omitempty"`
	// Approvers is the group whose tokens may decide the gate (admin
	// always may); empty for any token that may approve.
	Approvers string `json:"approvers,omitempty"`
}

// GateDecidedData is who decided a gate, and why (GATE_APPROVED,
// GATE_REJECTED).
type GateDecidedData struct {
	By      string `json:"by"`
	Comment string `json:"comment"`
	// Note is the "by" a request claimed when its token's actor differs.
	Note string `json:"note,omitempty"`
}

// CompensationStartedData names the verb that undoes the step.
type CompensationStartedData struct {
	Verb string `json:"verb"`
	// OnBehalfOf is the actor of the token that submitted the runbook,
	// whose scope the compensation is held to (verb_call_scope.go).
	OnBehalfOf string `json:"on_behalf_of,omitempty"`
}

// RunbookFinishedData names the steps that made a runbook fail or
// escalate (RUNBOOK_FAILED, RUNBOOK_ESCALATED; RUNBOOK_COMPLETED has
// none).
type RunbookFinishedData struct {
	FailedSteps    []string `json:"failed_steps,omitempty"`
	EscalatedSteps []string `json:"escalated_steps,omitempty"`
	// Reason and SkippedSteps: a draft_only runbook ends partial with
	// reason DRAFT_ONLY and the steps it did not run (docs/design/semantics.md
	// section 13).
	Reason       rbtype.ErrorCode `json:"reason,omitempty"`
	SkippedSteps []string         `json:"skipped_steps,omitempty"`
}

// InvocationCancelData is what a cancelled runbook's request to stop a
// wait's external work came to (INVOCATION_CANCEL_SENT, _FAILED).
type InvocationCancelData struct {
	CorrelationKey string           `json:"correlation_key"`
	Code           rbtype.ErrorCode `json:"code,omitempty"`
	Message        string           `json:"message,omitempty"`
}

// RunbookCancelledData is who cancelled the runbook.
type RunbookCancelledData struct {
	By   string `json:"by"`
	Note string `json:"note,omitempty"`
	// Compensate says the cancel undoes what completed.
	Compensate bool `json:"compensate,omitempty"`
}

// RunbookSubmittedData is the submission.
type RunbookSubmittedData struct {
	Actor    string      `json:"actor"`
	Note     string      `json:"note,omitempty"`
	Mode     rbtype.Mode `json:"mode"`
	PlanHash string      `json:"plan_hash"`
	HoldOpen bool        `json:"hold_open,omitempty"`
	// PolicyHash is the tenant's policy it was admitted under, and Budget
	// its own budget, if it asked one.
	PolicyHash string         `json:"policy_hash,omitempty"`
	Budget     *rbtype.Budget `json:"budget,omitempty"`
}

// RunbookExtendedData is an extension (also the payload of its mutation).
type RunbookExtendedData struct {
	Source   string   `json:"source"`
	Steps    []string `json:"steps"`
	PlanHash string   `json:"plan_hash"`
	Version  int      `json:"version"`
	// PolicyHash is the policy the new steps were admitted under.
	PolicyHash string `json:"policy_hash,omitempty"`
}

// CacheSource is the provenance of a cached result: the step and attempt
// that computed it, when, until when it lives, and under which definition
// of its verb.
type CacheSource struct {
	RunbookID      uuid.UUID  `json:"runbook_id"`
	Step           string     `json:"step"`
	Attempt        int        `json:"attempt"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`
	DefinitionHash string     `json:"definition_hash"`
}

// MapExpandedData is a for-each's expansion (MAP_EXPANDED): its loop, how
// many elements its list held, and how many steps that made.
type MapExpandedData struct {
	Loop  string `json:"loop"`
	Count int    `json:"count"`
	Steps int    `json:"steps"`
}
