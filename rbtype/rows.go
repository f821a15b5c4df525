package rbtype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// The row types: what the store reads and the runtime reasons about. They
// mirror the tables of docs/design/runtime.md; their status fields are rbtype's.

// Runbook is a row of runbooks.
type Runbook struct {
	ID           uuid.UUID
	Plan         json.RawMessage
	PlanHash     string
	Inputs       json.RawMessage
	Status       RunbookStatus
	Mode         Mode
	RequestKey   string
	Version      int
	WakeAt       *time.Time
	ErrorCode    ErrorCode
	ErrorMessage string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	FinishedAt   *time.Time
	Lineage      Lineage
	// Tenant owns the runbook (docs/design/semantics.md section 1).
	Tenant string
	// Actor submitted it.
	Actor string
	// Name is its name for people; empty for one stored before names
	// were kept. Only the reads for the API fill it (Store.Runbook and
	// ListRunbooks), not the advance's.
	Name string
	// Trace is the runbook's place in a distributed trace (docs/design/semantics.md
	// section 2); zero for a runbook stored before traces were kept.
	Trace Trace
	// PolicyHash is the hash of the tenant's policy the runbook was
	// admitted under (docs/design/semantics.md section 10); empty for a
	// runbook admitted before policies.
	PolicyHash string
	// Budget is the runbook's own budget, as its submission asked; nil
	// when it asked none (the tenant's runbook budget still applies).
	Budget *Budget
	// Spent is what its attempts have spent so far (docs/design/semantics.md
	// section 11).
	Spent Spend
	// Scope is what the token that submitted it (or regenerated it) could
	// do; nil for a token that may use every verb at any risk. Its
	// compensations and escalations run on that token's behalf and are
	// held to it (docs/design/semantics.md section 17).
	Scope *TokenScope
}

// TokenScope is what a token may do, as a runbook keeps it: the verbs
// (globs over full verb names, as a token line's verbs= writes them; empty
// for every verb), the riskiest step (empty for high), and the actor it
// acts as.
type TokenScope struct {
	Verbs   []string `json:"verbs,omitempty"`
	MaxRisk Risk     `json:"max_risk,omitempty"`
	Actor   string   `json:"actor,omitempty"`
}

// Trace is what a runbook keeps of the trace context it was submitted
// in, as the W3C headers spell it: lower-case hex ids. Empty fields are
// ones not known (the runtime supplies their defaults).
type Trace struct {
	TraceID      string // 32 hex digits
	ParentSpanID string // 16 hex digits: the submitter's span; "" for a root
	Flags        byte   // the traceparent's trace flags (1: sampled)
	State        string // W3C tracestate
	// CorrelationID is the submitter's X-Correlation-Id, or the
	// runbook's id.
	CorrelationID string
}

// Lineage is where a regenerated runbook came from (docs/design/semantics.md section
// 6). An original runbook is its own root: its Root and Parent are
// uuid.Nil and its Generation 0.
type Lineage struct {
	Root       uuid.UUID
	Parent     uuid.UUID
	Generation int
}

// RootOf is the id of the lineage's root: the runbook's own id when it is
// an original.
func (l Lineage) RootOf(id uuid.UUID) uuid.UUID {
	if l.Root == uuid.Nil {
		return id
	}
	return l.Root
}

// Step is a row of runbook_steps: what never changes once stored (its
// place in the plan), the state an advance changes (StepState), and, as
// loaded, its lease and its place in the order of completions.
type Step struct {
	ID        int64
	RunbookID uuid.UUID
	Key       string
	Position  int
	Verb      string
	Args      json.RawMessage
	Execution json.RawMessage
	Gate      Gate
	StepState
	CompletionSeq *int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Lease is the step's active lease, as loaded; nil when no worker
	// holds it. An advance takes and gives up leases through
	// AdvanceWrite.Leases and AdvanceWrite.EndLeases, not through this.
	Lease *Lease
}

// StepState is the part of a step that changes as it runs: its status,
// attempt, keys, arguments and result, error, gate decision, compensation
// and escalation, and times. A write carries it whole (StepChange).
type StepState struct {
	Status             StepStatus
	Attempt            int
	NextAttemptAt      *time.Time
	IdempotencyKey     string
	InvocationID       *uuid.UUID
	ResolvedArgs       json.RawMessage
	Result             json.RawMessage
	ErrorCode          ErrorCode
	ErrorMessage       string
	Simulated          bool
	GateDecision       GateDecision
	GateDecidedBy      string
	GateDecidedAt      *time.Time
	GateComment        string
	CompensationStatus CompensationStatus
	CompensationError  string
	EscalationStatus   EscalationStatus
	EscalationError    string
	StartedAt          *time.Time
	FinishedAt         *time.Time
}

// Change returns the change that writes the step as it is.
func (s *Step) Change() StepChange { return StepChange{ID: s.ID, StepState: s.StepState} }

// Edge is a row of runbook_edges: To runs after From completes.
type Edge struct {
	From string
	To   string
	Kind string
}

// Lease is a step's lease: which worker holds it, for which attempt, until
// when (the lease columns of runbook_steps, readable as the view
// step_leases).
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
	Status         InvocationStatus
	ParkedAt       time.Time
	TimeoutAt      time.Time
	Context        json.RawMessage
	ExternalID     string
	FinishedAt     *time.Time
	// IdempotencyKey is the key of a durable step whose key is shared
	// (global or tenant scope), so that a twin under the same key finds
	// the wait; empty for others.
	IdempotencyKey string
	// Attached: the wait is a twin's, attached to another runbook's open
	// wait under the same key; no call started it (docs/design/semantics.md
	// section 16).
	Attached bool
	// Notified: the notification that ends this wait is in the inbox and
	// the runbook is due to consume it (set by Store.InvocationsOf only).
	Notified bool
}

// Notification is a row of completion_notifications: the inbox.
type Notification struct {
	ID             int64
	CorrelationKey string
	PayloadHash    string
	Outcome        NotificationOutcome
	Result         json.RawMessage
	ErrorCode      ErrorCode
	ErrorMessage   string
	Status         NotificationStatus
	ReceivedAt     time.Time
	ProcessedAt    *time.Time
	// Tenant is the tenant of the webhook secret that signed it; empty
	// for a secret of no tenant, which may resolve any wait.
	Tenant string
	// TraceParent is the W3C traceparent it came with, checked; the
	// resume it causes links to that span.
	TraceParent string
	// Usage is what the external work reported it used; it is added to
	// the ledger row of the attempt the notification resumes.
	Usage Usage
}

// Receipt is a row of action_receipts: a handler's result for an
// idempotency key.
type Receipt struct {
	Handler        string
	IdempotencyKey string
	RunbookID      uuid.UUID
	// Scope is the idempotency scope its key was derived in: a global
	// key's receipt is kept for ever, the others until their runbook's
	// lineage is pruned and their window has passed.
	Scope      Scope
	StepKey    string
	Result     json.RawMessage
	ResultHash string
	CreatedAt  time.Time
}

// ReceiptKey names a receipt: a handler (or verb) and an idempotency key.
type ReceiptKey struct {
	Handler        string
	IdempotencyKey string
}

// Event is a row of runbook_events.
type Event struct {
	ID int64
	// Seq numbers the runbook's own events from 1 (set when read; ID is
	// global and stays the cursor).
	Seq       int64
	RunbookID uuid.UUID
	Type      EventType
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
	Kind      MutationKind
	Payload   json.RawMessage
	At        time.Time
}

// CacheEntry is a row of result_cache: a verb's result for a cache key,
// and where it came from (docs/design/semantics.md section 4).
type CacheEntry struct {
	Tenant         string
	Key            string
	Verb           string
	DefinitionHash string
	Result         json.RawMessage
	RunbookID      uuid.UUID
	StepKey        string
	Attempt        int
	CreatedAt      time.Time
	// ExpiresAt is nil for an entry that never expires (policy reuse).
	ExpiresAt *time.Time
}

// Live reports whether the entry may still be used at now.
func (c CacheEntry) Live(now time.Time) bool { return c.ExpiresAt == nil || now.Before(*c.ExpiresAt) }

// Usage is what an attempt used, as its handler reported it (docs/design/semantics.md
// section 3); zero values are what it did not report.
type Usage struct {
	TokensIn  int64   `json:"tokens_in,omitempty"`
	TokensOut int64   `json:"tokens_out,omitempty"`
	Model     string  `json:"model,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	Credits   float64 `json:"credits,omitempty"`
	// Parameters are the model's parameters (temperature, say), a JSON
	// object kept with the outcome the call produced (docs/design/semantics.md
	// section 13), not in the ledger.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// IsZero reports whether nothing was reported.
func (u Usage) IsZero() bool {
	return u.TokensIn == 0 && u.TokensOut == 0 && u.Model == "" && u.CostUSD == 0 && u.Credits == 0 && len(u.Parameters) == 0
}

// Reservation is a change of what a runbook and its tenant have reserved
// of their budgets: an attempt's declared cost as it starts, given back
// when it ends.
type Reservation struct {
	RunbookID uuid.UUID
	Tenant    string
	// Day is the day the attempt started: a reservation is given back on
	// the day it was made.
	Day     time.Time
	CostUSD float64
}

// UnreservedChange is a change of what a runbook counts of its attempts
// running whose verbs declare no cost, under its tenant's day or month
// cost cap (docs/design/semantics.md, "Budgets hold under concurrency"):
// Running is +1 as one starts and -1 as it ends; Waits says the runbook
// holds a step back until one of its tenant's ends, and is to be woken
// then.
type UnreservedChange struct {
	RunbookID uuid.UUID
	Tenant    string
	Running   int
	Waits     bool
}

// Attempt is a row of step_attempts: one attempt of a step, the job.
type Attempt struct {
	ID         uuid.UUID
	RunbookID  uuid.UUID
	Tenant     string
	Actor      string
	StepKey    string
	Verb       string
	Attempt    int
	WorkerID   string
	StartedAt  *time.Time
	FinishedAt time.Time
	Outcome    string // succeeded, failed or parked
	ErrorCode  ErrorCode
	Cache      string // hit, miss or off
	Usage      Usage
	// CorrelationID and TraceID are the runbook's; SpanID is the
	// attempt's span (hex), derived from its id.
	CorrelationID, TraceID, SpanID string
	// ArgsHash is the SHA-256 of the attempt's resolved arguments (their
	// canonical JSON), and ResultHash of its result; empty when not known
	// (an attempt recorded by its resume keeps its park's).
	ArgsHash, ResultHash string
}

// Outcome is what a step produced (docs/design/semantics.md section 13): a row of
// outcomes. Version and Previous are worked out by the store when it is
// written: the latest outcome of the same lineage and step in an earlier
// generation is the previous version.
type Outcome struct {
	ID          uuid.UUID       `json:"outcome_id"`
	Tenant      string          `json:"-"`
	RunbookID   uuid.UUID       `json:"runbook_id"`
	LineageRoot uuid.UUID       `json:"lineage_root"`
	Generation  int             `json:"generation"`
	StepKey     string          `json:"step"`
	Attempt     int             `json:"attempt"`
	Verb        string          `json:"verb"`
	Type        string          `json:"type"`
	Status      OutcomeStatus   `json:"status"`
	Preview     string          `json:"preview"`
	ArgsHash    string          `json:"args_hash,omitempty"`
	ResultHash  string          `json:"result_hash"`
	Model       string          `json:"model,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Consumed are the outcomes whose results this one was made from.
	Consumed  []uuid.UUID `json:"consumed"`
	Version   int         `json:"version"`
	Previous  *uuid.UUID  `json:"previous,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
}

// Arguments are a step's resolved arguments kept by their hash.
type Arguments struct {
	RunbookID uuid.UUID
	Hash      string
	Args      json.RawMessage
}

// TenantBudget is what an advance reads of a tenant's budgets: those an
// admin set (rbd budget set), which replace the policy's scope by scope,
// and what the tenant has spent on the day and in the month (UTC) of
// LoadOptions.Day.
type TenantBudget struct {
	Set        map[BudgetScope]Budget
	Day, Month Spend
	// Unreserved counts the attempts running, in the tenant's unfinished
	// runbooks other than those the advance loaded, whose verbs declare no
	// cost; read only for a tenant whose day or month is capped.
	Unreserved int
}
