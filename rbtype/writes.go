package rbtype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// The write types: what the runtime asks the store to change.

// NewRunbook is what a submission stores: a runbook row, its steps in
// plan order, and its edges.
type NewRunbook struct {
	ID       uuid.UUID
	Plan     json.RawMessage
	PlanHash string
	Inputs   json.RawMessage
	Mode     Mode
	// Status is executing, or in_progress for a runbook held open.
	Status     RunbookStatus
	RequestKey string
	// Lineage is zero for an original; a regeneration's names its root,
	// its parent and its generation.
	Lineage Lineage
	// Tenant owns the runbook; empty is the default tenant.
	Tenant string
	// Actor submits it.
	Actor string
	// Name is the runbook's name for people (its source file's, or one
	// given at submit); empty for a regeneration, which keeps its
	// parent's.
	Name string
	// Trace is the trace context it runs in (docs/design/semantics.md section 2).
	Trace Trace
	Steps []NewStep
	Edges []Edge
	// EdgesInPlan says Plan's "edges" are Edges, as a compiled plan's
	// are: runbook_edges shows them from the plan, and no row of
	// runbook_edge_rows is written for them (migration 027).
	EdgesInPlan bool
	// WorkerID and SubmittedData go into the RUNBOOK_SUBMITTED event.
	WorkerID      string
	SubmittedData json.RawMessage
	// Events are written after RUNBOOK_SUBMITTED: what admission decided
	// about the steps (POLICY_GATED).
	Events []Event
	// PolicyHash is the hash of the policy the runbook is admitted under;
	// Budget its submission's own budget, nil for none.
	PolicyHash string
	Budget     *Budget
	// Scope is what the submitting token may do (Runbook.Scope); nil for
	// every verb at any risk.
	Scope *TokenScope
}

// NewStep is a step to store.
type NewStep struct {
	Key       string
	Position  int
	Verb      string
	Args      json.RawMessage
	Execution json.RawMessage
	Gate      Gate
	// IdempotencyKey is empty, except in a regeneration, whose steps that
	// do not regenerate inherit their parent's key (docs/design/semantics.md section
	// 6): an effect the parent had returns its receipt.
	IdempotencyKey string
}

// StepChange is the new state of a step's mutable columns. It is the
// whole state the caller holds, not a difference; except that an empty
// ResolvedArgs or Result keeps what is stored, since a worker may hold a
// step without them and neither is ever cleared.
type StepChange struct {
	ID int64
	StepState
	// Completed assigns the step its place in the order of completions,
	// which compensation walks backwards.
	Completed bool
	// Ledger, when set, is the job-ledger row of the attempt this change
	// completes, kept in the step's row instead of a row of its own
	// (docs/design/runtime.md, "The job ledger and the edges"): the attempt succeeded,
	// used nothing and touched no cache, so the step row says the rest.
	// Nil keeps what the row holds.
	Ledger *ImplicitAttempt
}

// ImplicitAttempt is what a step row keeps of an attempt whose ledger row
// it stands for: what the row has no column for.
type ImplicitAttempt struct {
	ID                   uuid.UUID
	WorkerID             string
	ArgsHash, ResultHash string
}

// RunbookChange is a new state for a runbook row. Nil fields are kept.
type RunbookChange struct {
	ID           uuid.UUID
	Status       *RunbookStatus
	ErrorCode    *ErrorCode
	ErrorMessage *string
	Finished     bool
	// Reopen clears finished_at: a finished runbook runs again (a retry).
	Reopen bool
	// Mode, when set, replaces the mode (a draft run for real).
	Mode *Mode
	// WakeAt replaces wake_at when SetWake is true (nil clears it).
	SetWake bool
	WakeAt  *time.Time
	// Extension: the new plan, its version, and the inputs with the
	// extension's own.
	Plan     json.RawMessage
	PlanHash string
	Version  int
	Inputs   json.RawMessage
}

// LeaseRequest asks for a lease on a step for a worker and attempt.
type LeaseRequest struct {
	StepID    int64
	RunbookID uuid.UUID
	Attempt   int
}

// InvocationUpdate is what a park learned: the external process's id, an
// earlier timeout (a timer), and the context to keep.
type InvocationUpdate struct {
	ID         uuid.UUID
	ExternalID string
	TimeoutAt  *time.Time
	Context    json.RawMessage
}

// StepKey names a step by runbook and key.
type StepKey struct {
	RunbookID uuid.UUID
	Key       string
}

// StepData is a step's resolved arguments and result.
type StepData struct {
	ResolvedArgs json.RawMessage
	Result       json.RawMessage
}
