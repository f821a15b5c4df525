package apitype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// Blocked-on reasons.
const (
	BlockedRequiresApproval     = "REQUIRES_APPROVAL"
	BlockedAwaitingNotification = "AWAITING_NOTIFICATION"
	// BlockedAwaitingTimer: a timer.sleep step, which the daemon resumes
	// itself. docs/design/runtime.md does not name it; a sleeping runbook is waiting on
	// no one, but a reader wants to know what it waits for.
	BlockedAwaitingTimer = "AWAITING_TIMER"
	// BlockedInDoubt: a step whose call may have happened, to a provider
	// that ignores idempotency keys; a person resolves it
	// (docs/design/semantics.md section 16).
	BlockedInDoubt = "IN_DOUBT"
)

// RunbookView is a runbook as the API shows it: its state, its steps,
// what completed (outcomes), and what it waits for (blocked_on). Completed
// work is shown whatever became of the rest.
type RunbookView struct {
	ID     uuid.UUID            `json:"id"`
	Status rbtype.RunbookStatus `json:"status"`
	// State refines an executing runbook: "parked", "awaiting_approval"
	// or "in_doubt" (a person must say whether a step's call happened)
	// when nothing can move until the outside world acts.
	State    rbtype.RunbookState `json:"state"`
	Mode     rbtype.Mode         `json:"mode"`
	PlanHash string              `json:"plan_hash"`
	Version  int                 `json:"version"`
	Inputs   json.RawMessage     `json:"inputs"`
	Lineage  LineageView         `json:"lineage"`
	// Cost sums what the runbook's attempts used (docs/design/semantics.md
	// section 3), and lists the budgets that apply with what is left
	// (section 11).
	Cost CostView `json:"cost"`
	// PolicyHash is the tenant's policy the runbook was admitted under
	// (docs/design/semantics.md section 10); empty for one admitted
	// before policies.
	PolicyHash string `json:"policy_hash,omitempty"`
	// Budget is the runbook's own budget, when its submission asked one.
	Budget *rbtype.Budget `json:"budget,omitempty"`
	// TraceID, SpanID and CorrelationID place the runbook in a
	// distributed trace (docs/design/semantics.md section 2): its trace (the
	// submitter's, or its own), its span, and the submitter's
	// X-Correlation-Id (or its id). ParentSpanID is the submitter's span.
	TraceID       string `json:"trace_id"`
	SpanID        string `json:"span_id"`
	ParentSpanID  string `json:"parent_span_id,omitempty"`
	CorrelationID string `json:"correlation_id"`
	// Name is the runbook's name for people (its source file's, or the
	// one given at submit); empty for one stored before names were kept.
	Name string `json:"name,omitempty"`
	// Tenant owns the runbook; Actor submitted it.
	Tenant string     `json:"tenant"`
	Actor  string     `json:"actor,omitempty"`
	Error  *ErrorView `json:"error,omitempty"`
	// Reason says why a partial runbook is not complete when no step
	// failed: DRAFT_ONLY, a draft whose outside effects have yet to run.
	Reason     *ErrorView `json:"reason,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Steps are the steps of the page asked for (the first
	// DefaultViewSteps by default), and Outcomes their results; StepsTotal
	// counts them all, and StepsNext, when more follow, is the
	// steps_after that reads the next page.
	Steps      []StepView                 `json:"steps"`
	StepsTotal int                        `json:"steps_total"`
	StepsNext  *string                    `json:"steps_next,omitempty"`
	Outcomes   map[string]json.RawMessage `json:"outcomes"`
	// Produced lists the typed outcomes the steps recorded (docs/design/semantics.md
	// section 13); GET /v1/outcomes/{id} has each one's provenance.
	Produced  []ProducedView `json:"produced"`
	BlockedOn []BlockedView  `json:"blocked_on"`
	// Failures are the steps that failed or escalated, with why.
	Failures []FailureView `json:"failures"`
	// NextActions is what would move the runbook and the token asking
	// may do now, each with the rbd command that does it
	// (docs/design/semantics.md section 5): each is accepted if taken
	// with that token.
	NextActions []ActionView `json:"next_actions"`
	// UnavailableActions is what would move the runbook but the token
	// asking may not do (a gate of another group, a risk above its
	// max_risk, a role it lacks), each with its Reason: whom to ask.
	UnavailableActions []ActionView `json:"unavailable_actions"`
}

// ProducedView is one outcome of a runbook, as its view lists it.
type ProducedView struct {
	OutcomeID uuid.UUID            `json:"outcome_id"`
	Type      string               `json:"type"`
	Status    rbtype.OutcomeStatus `json:"status"`
	Preview   string               `json:"preview"`
	Step      string               `json:"step"`
	Version   int                  `json:"version"`
}

// LineageView is where a runbook came from (docs/design/semantics.md section 6): an
// original is its own root, with no parent and generation 0; each
// regeneration is one generation more than its parent.
type LineageView struct {
	Root       uuid.UUID  `json:"root"`
	Parent     *uuid.UUID `json:"parent"`
	Generation int        `json:"generation"`
}

// FailureView is a step that failed or escalated.
type FailureView struct {
	Step    string           `json:"step"`
	Code    rbtype.ErrorCode `json:"code"`
	Message string           `json:"message,omitempty"`
}

// The kinds of next action.
const (
	// ActionApprove: a gate waits for a person's decision.
	ActionApprove = "approve"
	// ActionNotify: a parked step waits for the outside world's
	// notification.
	ActionNotify = "notify"
	// ActionRetry: a failed, partial or escalated runbook may run its
	// failed steps again; a finished draft_only runbook may run the steps
	// it skipped for real (rbd retry ID --execute).
	ActionRetry = "retry"
	// ActionClose: a runbook held open finishes once closed.
	ActionClose = "close"
	// ActionResolve: a step escalated to a person waits for their
	// resolution (complete, retry or fail).
	ActionResolve = "resolve"
)

// ActionView is one thing that would move a runbook.
type ActionView struct {
	Kind string `json:"kind"`
	Step string `json:"step,omitempty"` // none for close
	// Args are what taking it needs, as data (MCP's tool calls, the
	// console's buttons); Command is the same as an `rbd` command line.
	Args    ActionArgs `json:"args"`
	Command string     `json:"command"`
	// Does says in words what taking it will do.
	Does string `json:"does"`
	// Message says what to do first, when the command alone would not
	// do: a step stopped by a budget needs it raised before a retry.
	Message string `json:"message,omitempty"`
	// Budget is the budget that is spent, for a step it stopped.
	Budget *BudgetView `json:"budget,omitempty"`
	// Reason, in unavailable_actions only, says why the token asking may
	// not take it, and so whom to ask (a group, a max_risk, a role).
	Reason string `json:"reason,omitempty"`
}

// ErrorView is a failure's code and message.
type ErrorView struct {
	Code    rbtype.ErrorCode `json:"code"`
	Message string           `json:"message,omitempty"`
}

// StepView is one step.
type StepView struct {
	Key     string            `json:"key"`
	Verb    string            `json:"verb"`
	Status  rbtype.StepStatus `json:"status"`
	Attempt int               `json:"attempt"`
	// AttemptID and SpanID name its latest attempt in the job ledger and
	// in the trace; absent before its first attempt.
	AttemptID *uuid.UUID      `json:"attempt_id,omitempty"`
	SpanID    string          `json:"span_id,omitempty"`
	Gate      rbtype.Gate     `json:"gate"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *ErrorView      `json:"error,omitempty"`
	Simulated bool            `json:"simulated,omitempty"`
	// DryRun marks a dry run's result: its handler's rehearsal, or a
	// placeholder shaped by the verb's output_schema; nothing happened.
	DryRun         bool          `json:"dry_run,omitempty"`
	CorrelationKey string        `json:"correlation_key,omitempty"`
	NextAttemptAt  *time.Time    `json:"next_attempt_at,omitempty"`
	GateDecision   *GateDecision `json:"gate_decision,omitempty"`
	Compensation   *Compensation `json:"compensation,omitempty"`
	// Escalation is the state of the page an escalating wait sent.
	Escalation *Compensation `json:"escalation,omitempty"`
	StartedAt  *time.Time    `json:"started_at,omitempty"`
	FinishedAt *time.Time    `json:"finished_at,omitempty"`

	// ParkedAt and TimeoutAt are a parked step's: since when it waits, and
	// when it gives up (its invocation's timeout).
	ParkedAt  *time.Time `json:"parked_at,omitempty"`
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`

	// Kind is "hook" for a failure hook and "template" for a for-each's
	// step template (docs/design/language.md v1.2, v1.3); empty for an
	// ordinary step, an iteration included.
	Kind string `json:"kind,omitempty"`
	// Iterations counts a template's instances by how they stand, once
	// its list is known.
	Iterations *Iterations `json:"iterations,omitempty"`
}

// Iterations counts the instances of a for-each's template: all of them,
// those that completed, those under way (ready, running, parked, waiting
// for approval or a retry), and those that failed; the rest are pending,
// skipped or cancelled.
type Iterations struct {
	Count   int `json:"count"`
	Done    int `json:"done"`
	Running int `json:"running"`
	Failed  int `json:"failed"`
}

// The kinds of step a view names.
const (
	StepKindHook     = "hook"
	StepKindTemplate = "template"
)

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

// BlockedView is one thing a runbook waits for. A finished runbook waits
// for nothing but the resolution of its escalated steps: its failures are
// under failures.
type BlockedView struct {
	Step           string     `json:"step"`
	Reason         string     `json:"reason"`
	CorrelationKey string     `json:"correlation_key,omitempty"`
	Until          *time.Time `json:"until,omitempty"`
	Message        string     `json:"message,omitempty"`
	// Gate is what the person deciding a gate needs to know
	// (REQUIRES_APPROVAL only; GET /v1/runbooks/{id} fills it, a listing
	// does not).
	Gate *GateView `json:"gate,omitempty"`
}

// The steps a view shows whole, by default and at most (GetPage).
const (
	DefaultViewSteps = 1000
	MaxViewSteps     = 10_000
)

// RunbookSummary is a runbook in a listing: what identifies it, and what
// it waits on, as its view would say (without the gates' details).
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
	Error      *ErrorView           `json:"error,omitempty"`
	CreatedAt  time.Time            `json:"created_at"`
	UpdatedAt  time.Time            `json:"updated_at"`
	FinishedAt *time.Time           `json:"finished_at,omitempty"`
	// NeedsPerson says that it waits on a person: one of its next or
	// unavailable actions is an approval, a resolution or a retry (the
	// person may be someone other than the token asking).
	NeedsPerson bool          `json:"needs_person"`
	BlockedOn   []BlockedView `json:"blocked_on"`
	// NextActions and UnavailableActions are the view's: what the token
	// asking may do, and what only another may, with why.
	NextActions        []ActionView `json:"next_actions"`
	UnavailableActions []ActionView `json:"unavailable_actions"`
}

// RunbookList is a page of summaries; Next is the cursor of the next
// page, empty on the last.
type RunbookList struct {
	Runbooks []RunbookSummary
	Next     string
}

// StepDetail is one step as a person inspecting it needs it: its state (as
// in the runbook's view), its arguments as frozen and as resolved, what it
// does to the outside world, and the gate that applies to it.
type StepDetail struct {
	StepView
	// Args are the arguments as the plan froze them: literals, and
	// {"$ref": ...} and {"$input": ...} placeholders.
	Args map[string]any `json:"args"`
	// ResolvedArgs are their values: what its last attempt was called
	// with once it has run (ArgsFrom "attempt"), else resolved from the
	// inputs and the results known now ("resolved", or "partial" when a
	// reference waits on a step without a result yet, which stays as the
	// plan has it).
	ResolvedArgs json.RawMessage `json:"resolved_args"`
	ArgsFrom     string          `json:"args_from"`
	Risk         rbtype.Risk     `json:"risk"`
	// SideEffects and Target are what the step does to the world outside
	// and what it acts on (the plan's effects).
	SideEffects rbtype.SideEffects `json:"side_effects"`
	Target      string             `json:"target,omitempty"`
	// GateWhy says what put the step's own gate there (GatePolicy,
	// GateRisk, GateVerb, GateCall); empty without one. Policy is the
	// policy's word on it, when a policy gated it.
	GateWhy string          `json:"gate_why,omitempty"`
	Policy  json.RawMessage `json:"policy,omitempty"`
	// GateWhen is the step's :gate-when as the runbook wrote it: its gate
	// applies only when the condition holds, decided when the step
	// becomes ready (docs/design/language.md v1.4). Approvers is the
	// group whose tokens may decide its gate (admin always may). Each is
	// empty without one.
	GateWhen  string `json:"gate_when,omitempty"`
	Approvers string `json:"approvers,omitempty"`
	// GatedBy is the step whose gate stands in front of this one's
	// effect: itself, one upstream, or none (empty).
	GatedBy   string          `json:"gated_by,omitempty"`
	Execution json.RawMessage `json:"execution"`
	VerbHash  string          `json:"verb_hash"`
	Pos       *SourcePos      `json:"pos,omitempty"`
}

// Where a step's resolved arguments come from.
const (
	ArgsFromAttempt  = "attempt"
	ArgsFromResolved = "resolved"
	ArgsFromPartial  = "partial"
)

// OutcomeView is an outcome with its provenance (docs/design/semantics.md section
// 13): the record, the arguments of the attempt that made it, the
// outcomes it was made from (and theirs, as far as they go), and its
// earlier versions across regenerations, newest first.
type OutcomeView struct {
	Outcome
	// Arguments are the resolved arguments of the attempt that produced
	// it, found by their hash; absent when they are not kept (a runbook
	// from before outcomes).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Provenance lists the outcomes it consumed, then theirs, breadth
	// first, each once, at most MaxProvenance.
	Provenance []Outcome `json:"provenance"`
	// Versions lists its earlier versions, newest first.
	Versions []Outcome `json:"versions"`
}

// MaxProvenance bounds the outcomes a provenance chain lists.
const MaxProvenance = 100

// CostView is a runbook's cost (docs/design/semantics.md section 3) and
// the budgets that apply to it, each with what is left (section 11).
type CostView struct {
	Cost
	// Budgets lists the budgets that cap something: the runbook's, its
	// tenant's day's and month's (UTC), narrowest first; left out when
	// none does.
	Budgets []BudgetView `json:"budgets,omitempty"`
}

// BudgetView is one budget: its cap, what was spent against it, what is
// left, where it comes from, and whether it is spent (a step would not
// start).
type BudgetView struct {
	Budget   rbtype.BudgetScope `json:"budget"`
	Limit    rbtype.Budget      `json:"limit"`
	Spent    rbtype.Spend       `json:"spent"`
	Left     rbtype.Budget      `json:"left"`
	Rule     string             `json:"rule"`
	Exceeded bool               `json:"exceeded"`
}

// TenantBudgetsView is a tenant's budgets (docs/design/semantics.md
// section 11): for each scope, the budget that applies (the one an admin
// set, else the policy's) with what was spent and what is left; a
// runbook's spend is its own, so the runbook scope shows only its cap.
type TenantBudgetsView struct {
	Tenant  string             `json:"tenant"`
	Budgets []TenantBudgetView `json:"budgets"`
}

// TenantBudgetView is one scope of a tenant's budgets.
type TenantBudgetView struct {
	Budget rbtype.BudgetScope `json:"budget"`
	Limit  rbtype.Budget      `json:"limit"`
	// Spent and Left are the day's or the month's; absent for the
	// runbook scope, which each runbook spends on its own.
	Spent *rbtype.Spend  `json:"spent,omitempty"`
	Left  *rbtype.Budget `json:"left,omitempty"`
	// Rule is where the budget comes from: the policy's rule, or "set".
	Rule string `json:"rule"`
	// Set is the budget an admin set, with who and when; nil when the
	// policy's applies.
	Set *SetBudget `json:"set,omitempty"`
}

// BudgetChanged says what a change of budget replaced.
type BudgetChanged struct {
	Tenant string             `json:"tenant"`
	Budget rbtype.BudgetScope `json:"budget"`
	// Before is the budget set before (nil: the policy's applied), After
	// the one set now (nil: the policy's applies again).
	Before *rbtype.Budget `json:"before"`
	After  *rbtype.Budget `json:"after"`
	By     string         `json:"by"`
}

// GateView is what the person at a gate decides on (docs/daemon.md, "The
// console"): what the step will do, to what, with which arguments, and why
// it waits for them.
type GateView struct {
	Verb        string             `json:"verb"`
	Risk        rbtype.Risk        `json:"risk"`
	SideEffects rbtype.SideEffects `json:"side_effects"`
	// Target is what the step acts on, as its handler's params name it
	// (the plan's effects): a URL's host and path, a table.
	Target string `json:"target,omitempty"`
	// Args are the arguments the step will be called with: its inputs and
	// references resolved from what is known now. One that cannot be
	// resolved yet stays as the plan has it.
	Args map[string]any `json:"args"`
	// Why says what put the gate there: GatePolicy, GateRisk, GateVerb or
	// GateCall.
	Why string `json:"why"`
	// Policy is what the policy said when it gated the step (its
	// POLICY_GATED event's data), when a policy did.
	Policy json.RawMessage `json:"policy,omitempty"`
	// Since is when the step began to wait for a decision.
	Since time.Time `json:"since"`
	// Trust is the tenant's earned trust in the verb when the policy has
	// a trust rule for it: the console says "3 of 20 approvals to
	// auto-execute" (docs/design/semantics.md section 17).
	Trust *TrustView `json:"trust,omitempty"`
	// When is the step's :gate-when, the condition that held when it
	// became ready and made it wait (docs/design/language.md v1.4); empty
	// for a gate that always applies.
	When string `json:"when,omitempty"`
	// Approvers is the group whose tokens may decide the gate (admin
	// always may); empty for any token that may approve.
	Approvers string `json:"approvers,omitempty"`
}

// Why a step waits at a gate.
const (
	// GatePolicy: the tenant's policy gated it when the plan was admitted.
	GatePolicy = "policy"
	// GateRisk: its verb is risk high, and a high-risk step always waits.
	GateRisk = "risk"
	// GateVerb: its verb declares gate: human_confirm.
	GateVerb = "verb"
	// GateCall: the runbook's call asks for it (:gate "human_confirm").
	GateCall = "call"
)

// ScheduleView is a schedule as the API shows it.
type ScheduleView struct {
	ID       uuid.UUID       `json:"id"`
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone"`
	Filename string          `json:"filename"`
	Source   string          `json:"source,omitempty"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Inputs   json.RawMessage `json:"inputs"`
	Mode     rbtype.Mode     `json:"mode"`
	Overlap  rbtype.Overlap  `json:"overlap"`
	CatchUp  rbtype.CatchUp  `json:"catch_up"`
	Paused   bool            `json:"paused"`
	Actor    string          `json:"actor,omitempty"`
	// NextFireAt is the next tick, in UTC; absent while paused.
	NextFireAt *time.Time `json:"next_fire_at,omitempty"`
	// LastTickAt is the last tick fired or skipped, and LastRunbook the
	// runbook the last fired tick made, with its status.
	LastTickAt  *time.Time       `json:"last_tick_at,omitempty"`
	LastRunbook *LastRunbookView `json:"last_runbook,omitempty"`
	// LastError says why the last tick made no runbook (its source no
	// longer compiles, say, or overlap: skip found the previous runbook
	// running); empty after a tick that did.
	LastError string `json:"last_error,omitempty"`
	// Skipped counts the ticks skipped because the previous runbook was
	// unfinished (overlap: skip).
	Skipped   int64     `json:"skipped"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// LastRunbookView is the runbook a schedule's last fired tick made.
type LastRunbookView struct {
	ID     uuid.UUID            `json:"id"`
	Status rbtype.RunbookStatus `json:"status,omitempty"`
}

// Submitted says which runbook a submission started, and whether it was
// new (a repeat returns the existing runbook, whatever its state).
type Submitted struct {
	ID      uuid.UUID
	Created bool
	Status  rbtype.RunbookStatus
	Lineage LineageView
	// Name is the runbook's name (for a repeat, the first submission's).
	Name string
	// JoinedFailed is the failed runbook whose lineage a submission of
	// the same plan and inputs joined (docs/design/semantics.md section
	// 16); nil when it joined none.
	JoinedFailed *uuid.UUID
	// NewLineage: the submission asked for a fresh lineage; effects that
	// earlier runs had may repeat.
	NewLineage bool
}

// Retried says what a retry sent back to pending.
type Retried struct {
	Steps []string
}

// Extended says what an extension added.
type Extended struct {
	Steps   []string
	Version int
}

// Outcome is a step's outcome as the API shows it (docs/design/semantics.md
// section 13): what was produced, by which attempt, from what.
type Outcome struct {
	ID          uuid.UUID            `json:"outcome_id"`
	RunbookID   uuid.UUID            `json:"runbook_id"`
	LineageRoot uuid.UUID            `json:"lineage_root"`
	Generation  int                  `json:"generation"`
	StepKey     string               `json:"step"`
	Attempt     int                  `json:"attempt"`
	Verb        string               `json:"verb"`
	Type        string               `json:"type"`
	Status      rbtype.OutcomeStatus `json:"status"`
	Preview     string               `json:"preview"`
	ArgsHash    string               `json:"args_hash,omitempty"`
	ResultHash  string               `json:"result_hash"`
	Model       string               `json:"model,omitempty"`
	Parameters  json.RawMessage      `json:"parameters,omitempty"`
	// Consumed are the outcomes whose results this one was made from.
	Consumed  []uuid.UUID `json:"consumed"`
	Version   int         `json:"version"`
	Previous  *uuid.UUID  `json:"previous,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
}

// Cost is what attempts used, summed (docs/design/semantics.md section 3),
// for a runbook or for one group of a costs report.
type Cost struct {
	Group     string  `json:"group,omitempty"`
	CostUSD   float64 `json:"cost_usd"`
	Credits   float64 `json:"credits"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Attempts  int64   `json:"attempts"`
	CacheHits int64   `json:"cache_hits"`
}

// SetBudget is one budget an admin set, with who and when.
type SetBudget struct {
	Tenant    string             `json:"tenant"`
	Scope     rbtype.BudgetScope `json:"scope"`
	Budget    rbtype.Budget      `json:"budget"`
	UpdatedBy string             `json:"updated_by"`
	UpdatedAt time.Time          `json:"updated_at"`
}

// SourcePos is where a step was written: file, line and column.
type SourcePos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// Step finds a step by key.
func (r *RunbookView) Step(key string) (*StepView, bool) {
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
func (r *RunbookView) Settled() bool {
	switch r.State {
	case rbtype.StateParked, rbtype.StateAwaitingApproval, rbtype.StateHeldOpen, rbtype.StateInDoubt:
		return true
	}
	return r.FinishedAt != nil
}
