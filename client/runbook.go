package client

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// The reasons a runbook is blocked on a step (Blocked.Reason), besides a
// failed step's error code.
const (
	BlockedRequiresApproval     = "REQUIRES_APPROVAL"     // a gate waits for a person
	BlockedAwaitingNotification = "AWAITING_NOTIFICATION" // a parked step waits for the outside world
	BlockedAwaitingTimer        = "AWAITING_TIMER"        // a timer.sleep step, which the daemon resumes itself
)

// The kinds of next action (Action.Kind).
const (
	ActionApprove = "approve" // a gate waits for a decision
	ActionNotify  = "notify"  // a parked step waits for a notification
	ActionRetry   = "retry"   // failed steps may run again, or a draft for real
	ActionClose   = "close"   // a runbook held open finishes once closed
	ActionResolve = "resolve" // an escalated step waits for a person's resolution
)

// Runbook is GET /v1/runbooks/{id}: a runbook's state, its steps, what
// completed (Outcomes) and what it waits for (BlockedOn, NextActions).
type Runbook struct {
	ID     uuid.UUID            `json:"id"`
	Status rbtype.RunbookStatus `json:"status"`
	// State is the status, except that an executing runbook that cannot
	// move without the outside world is "parked" or "awaiting_approval",
	// and a held-open one whose steps have all ended is "held_open".
	State    rbtype.RunbookState `json:"state"`
	Mode     rbtype.Mode         `json:"mode"`
	PlanHash string              `json:"plan_hash"`
	// Version is 1 plus the extensions.
	Version int             `json:"version"`
	Inputs  json.RawMessage `json:"inputs"`
	Lineage Lineage         `json:"lineage"`
	// Cost sums what the runbook's attempts used, with the budgets that
	// apply to it.
	Cost Cost `json:"cost"`
	// PolicyHash is the tenant's policy the runbook was admitted under;
	// Budget its own budget, when its submission asked one.
	PolicyHash string         `json:"policy_hash,omitempty"`
	Budget     *rbtype.Budget `json:"budget,omitempty"`
	// TraceID, SpanID and CorrelationID place the runbook in a
	// distributed trace; ParentSpanID is the submitter's span.
	TraceID       string `json:"trace_id"`
	SpanID        string `json:"span_id"`
	ParentSpanID  string `json:"parent_span_id,omitempty"`
	CorrelationID string `json:"correlation_id"`
	// Name is the runbook's name for people: the one given at submit,
	// else its source file's; empty for one stored before names were kept.
	Name string `json:"name,omitempty"`
	// Tenant owns the runbook; Actor submitted it.
	Tenant string     `json:"tenant"`
	Actor  string     `json:"actor,omitempty"`
	Error  *ErrorInfo `json:"error,omitempty"`
	// Reason says why a partial runbook is not complete when no step
	// failed: DRAFT_ONLY, a draft whose outside effects have yet to run.
	Reason     *ErrorInfo `json:"reason,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Steps are the steps of the page asked for (GetPage; the first 1000
	// by default), Outcomes their results; StepsTotal counts them all, and
	// StepsNext, when more follow, is where the next page begins.
	Steps      []Step                     `json:"steps"`
	StepsTotal int                        `json:"steps_total"`
	StepsNext  *string                    `json:"steps_next,omitempty"`
	Outcomes   map[string]json.RawMessage `json:"outcomes"`
	// Produced lists the typed outcomes the steps recorded; Outcome reads
	// each one's provenance.
	Produced  []Produced `json:"produced"`
	BlockedOn []Blocked  `json:"blocked_on"`
	// Failures are the steps that failed or escalated, with why.
	Failures []Failure `json:"failures"`
	// NextActions is what would move the runbook, each with the rbd
	// command that does it.
	NextActions []Action `json:"next_actions"`
}

// Step finds a step by key.
func (r *Runbook) Step(key string) (*Step, bool) {
	for i := range r.Steps {
		if r.Steps[i].Key == key {
			return &r.Steps[i], true
		}
	}
	return nil, false
}

// Settled reports whether the runbook has stopped moving by itself: it
// has finished, or waits on a person, a notification or the agent that
// holds it open.
func (r *Runbook) Settled() bool {
	switch r.State {
	case rbtype.StateParked, rbtype.StateAwaitingApproval, rbtype.StateHeldOpen:
		return true
	}
	return r.FinishedAt != nil
}

// Lineage is where a runbook came from: an original is its own root, with
// no parent and generation 0; each regeneration is one generation more
// than its parent.
type Lineage struct {
	Root       uuid.UUID  `json:"root"`
	Parent     *uuid.UUID `json:"parent"`
	Generation int        `json:"generation"`
}

// Cost is what attempts used, summed: a runbook's, or a group's in GET
// /v1/costs (whose Group names it).
type Cost struct {
	Group     string  `json:"group,omitempty"`
	CostUSD   float64 `json:"cost_usd"`
	Credits   float64 `json:"credits"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Attempts  int64   `json:"attempts"`
	CacheHits int64   `json:"cache_hits"`
	// Budgets, in a runbook's view, are the budgets that apply to it,
	// narrowest first, each with what is left.
	Budgets []BudgetState `json:"budgets,omitempty"`
}

// BudgetState is one budget as a runbook meets it: its cap, what was
// spent against it, what is left, where it comes from (a policy's rule,
// the budget an admin set, the runbook's own), and whether it is spent.
type BudgetState struct {
	Budget   rbtype.BudgetScope `json:"budget"`
	Limit    rbtype.Budget      `json:"limit"`
	Spent    rbtype.Spend       `json:"spent"`
	Left     rbtype.Budget      `json:"left"`
	Rule     string             `json:"rule"`
	Exceeded bool               `json:"exceeded"`
}

// ErrorInfo is a failure's code and message: a runbook's, a step's, or
// what a failed notification reports.
type ErrorInfo struct {
	Code    rbtype.ErrorCode `json:"code"`
	Message string           `json:"message,omitempty"`
}

// Step is one step of a runbook.
type Step struct {
	Key     string            `json:"key"`
	Verb    string            `json:"verb"`
	Status  rbtype.StepStatus `json:"status"`
	Attempt int               `json:"attempt"`
	// AttemptID and SpanID name its latest attempt in the job ledger and
	// in the trace; absent before its first attempt.
	AttemptID      *uuid.UUID      `json:"attempt_id,omitempty"`
	SpanID         string          `json:"span_id,omitempty"`
	Gate           rbtype.Gate     `json:"gate"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *ErrorInfo      `json:"error,omitempty"`
	Simulated      bool            `json:"simulated,omitempty"`
	CorrelationKey string          `json:"correlation_key,omitempty"`
	NextAttemptAt  *time.Time      `json:"next_attempt_at,omitempty"`
	GateDecision   *GateDecision   `json:"gate_decision,omitempty"`
	Compensation   *Compensation   `json:"compensation,omitempty"`
	// Escalation is the state of the page an escalating wait sent.
	Escalation *Compensation `json:"escalation,omitempty"`
	StartedAt  *time.Time    `json:"started_at,omitempty"`
	FinishedAt *time.Time    `json:"finished_at,omitempty"`
	// ParkedAt and TimeoutAt are a parked step's: since when it waits, and
	// when it gives up.
	ParkedAt  *time.Time `json:"parked_at,omitempty"`
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`
	// Kind is "hook" for a failure hook, "template" for a for-each's step
	// template (whose instances are the steps keyed <key>[i]); empty for
	// an ordinary step.
	Kind string `json:"kind,omitempty"`
	// Iterations counts a template's instances by how they stand, once
	// its list is known.
	Iterations *Iterations `json:"iterations,omitempty"`
}

// Iterations counts a for-each template's instances: all, completed,
// under way, and failed.
type Iterations struct {
	Count   int `json:"count"`
	Done    int `json:"done"`
	Running int `json:"running"`
	Failed  int `json:"failed"`
}

// GateDecision is who decided a gate, when, and why.
type GateDecision struct {
	Decision rbtype.GateDecision `json:"decision"`
	By       string              `json:"by"`
	At       time.Time           `json:"at"`
	Comment  string              `json:"comment,omitempty"`
}

// Compensation is the state of a step's undoing, or of its escalation.
type Compensation struct {
	Status rbtype.CompensationStatus `json:"status"`
	Error  string                    `json:"error,omitempty"`
}

// Blocked is one thing a runbook waits for, or where it failed.
type Blocked struct {
	Step string `json:"step"`
	// Reason is one of the Blocked... constants, or a failed step's
	// error code.
	Reason         string     `json:"reason"`
	CorrelationKey string     `json:"correlation_key,omitempty"`
	Until          *time.Time `json:"until,omitempty"`
	Message        string     `json:"message,omitempty"`
	// Gate is what the person deciding a gate needs to know
	// (BlockedRequiresApproval, in Get's view; a listing leaves it out).
	Gate *Gate `json:"gate,omitempty"`
}

// Why a step waits at a gate (Gate.Why, StepDetail.GateWhy).
const (
	GatePolicy = "policy" // the tenant's policy gated it when the plan was admitted
	GateRisk   = "risk"   // its verb is risk high, and a high-risk step always waits
	GateVerb   = "verb"   // its verb declares gate: human_confirm
	GateCall   = "call"   // the runbook's call asks for it (:gate "human_confirm")
)

// Gate is what a step waiting at a gate will do, to what, with which
// arguments, and why it waits.
type Gate struct {
	Verb        string             `json:"verb"`
	Risk        rbtype.Risk        `json:"risk"`
	SideEffects rbtype.SideEffects `json:"side_effects"`
	// Target is what the step acts on: a URL's host and path, a table.
	Target string `json:"target,omitempty"`
	// Args are the arguments it will be called with, resolved; one whose
	// reference cannot be resolved yet is as the plan has it.
	Args map[string]any `json:"args"`
	// Why is one of the Gate... constants; Policy what the policy said,
	// when it gated the step.
	Why    string          `json:"why"`
	Policy json.RawMessage `json:"policy,omitempty"`
	// Since is when the step began to wait.
	Since time.Time `json:"since"`
}

// Failure is a step that failed or escalated.
type Failure struct {
	Step    string           `json:"step"`
	Code    rbtype.ErrorCode `json:"code"`
	Message string           `json:"message,omitempty"`
}

// Action is one thing that would move a runbook: its kind (one of the
// Action... constants), its step (none for close), and the rbd command
// that does it.
type Action struct {
	Kind    string `json:"kind"`
	Step    string `json:"step,omitempty"`
	Command string `json:"command"`
	// Message says what to do first when the command alone would not do
	// (a budget to raise before a retry); Budget is that budget.
	Message string       `json:"message,omitempty"`
	Budget  *BudgetState `json:"budget,omitempty"`
}

// RunbookSummary is one runbook in a list: what identifies it, and what
// it waits on, as its view says it (without a gate's details).
type RunbookSummary struct {
	ID         uuid.UUID            `json:"id"`
	Name       string               `json:"name,omitempty"`
	Tenant     string               `json:"tenant"`
	Actor      string               `json:"actor,omitempty"`
	Status     rbtype.RunbookStatus `json:"status"`
	State      rbtype.RunbookState  `json:"state"`
	Mode       rbtype.Mode          `json:"mode"`
	PlanHash   string               `json:"plan_hash"`
	Version    int                  `json:"version"`
	Error      *ErrorInfo           `json:"error,omitempty"`
	CreatedAt  time.Time            `json:"created_at"`
	UpdatedAt  time.Time            `json:"updated_at"`
	FinishedAt *time.Time           `json:"finished_at,omitempty"`
	// NeedsPerson: one of its next actions is an approval, a resolution
	// or a retry.
	NeedsPerson bool      `json:"needs_person"`
	BlockedOn   []Blocked `json:"blocked_on"`
	NextActions []Action  `json:"next_actions"`
}
