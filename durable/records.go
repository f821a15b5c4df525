package durable

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Runbook is a row of runbooks.
type Runbook struct {
	ID           uuid.UUID
	Plan         json.RawMessage
	PlanHash     string
	Inputs       json.RawMessage
	Status       string
	Mode         string
	RequestKey   string
	Version      int
	WakeAt       *time.Time
	ErrorCode    string
	ErrorMessage string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	FinishedAt   *time.Time
}

// Step is a row of runbook_steps.
type Step struct {
	ID                 int64
	RunbookID          uuid.UUID
	Key                string
	Position           int
	Verb               string
	Args               json.RawMessage
	Execution          json.RawMessage
	Gate               string
	Status             string
	Attempt            int
	NextAttemptAt      *time.Time
	IdempotencyKey     string
	InvocationID       *uuid.UUID
	ResolvedArgs       json.RawMessage
	Result             json.RawMessage
	ErrorCode          string
	ErrorMessage       string
	Simulated          bool
	GateDecision       string
	GateDecidedBy      string
	GateDecidedAt      *time.Time
	GateComment        string
	CompletionSeq      *int64
	CompensationStatus string
	CompensationError  string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	StartedAt          *time.Time
	FinishedAt         *time.Time
}

// Edge is a row of runbook_edges: To runs after From completes.
type Edge struct {
	From string
	To   string
	Kind string
}

// Lease is a row of step_leases.
type Lease struct {
	StepID     int64
	RunbookID  uuid.UUID
	WorkerID   string
	Attempt    int
	Status     string
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// Invocation is a row of invocation_records: a durable step's wait.
type Invocation struct {
	InvocationID   uuid.UUID
	StepID         int64
	RunbookID      uuid.UUID
	Attempt        int
	CorrelationKey string
	Status         string
	ParkedAt       time.Time
	TimeoutAt      time.Time
	Context        json.RawMessage
	ExternalID     string
	FinishedAt     *time.Time
}

// Notification is a row of completion_notifications: the inbox.
type Notification struct {
	ID             int64
	CorrelationKey string
	PayloadHash    string
	Outcome        string // "completed" or "failed"
	Result         json.RawMessage
	ErrorCode      string
	ErrorMessage   string
	Status         string // "received", "processed" or "ignored"
	ReceivedAt     time.Time
	ProcessedAt    *time.Time
}

// Receipt is a row of action_receipts: a handler's result for an
// idempotency key.
type Receipt struct {
	Handler        string
	IdempotencyKey string
	RunbookID      uuid.UUID
	StepKey        string
	Result         json.RawMessage
	ResultHash     string
	CreatedAt      time.Time
}

// Event is a row of runbook_events.
type Event struct {
	ID        int64
	RunbookID uuid.UUID
	Type      string
	StepKey   string
	Attempt   int
	WorkerID  string
	Data      json.RawMessage
	At        time.Time
}

// Mutation is a row of runbook_mutations.
type Mutation struct {
	ID        int64
	RunbookID uuid.UUID
	Actor     string
	Kind      string
	Payload   json.RawMessage
	At        time.Time
}
