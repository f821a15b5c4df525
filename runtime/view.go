package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
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
)

// RunbookView is a runbook as the API shows it: its state, its steps,
// what completed (outcomes), and what it waits for (blocked_on). Completed
// work is shown whatever became of the rest.
type RunbookView struct {
	ID     uuid.UUID            `json:"id"`
	Status rbtype.RunbookStatus `json:"status"`
	// State refines an executing runbook: "parked" or "awaiting_approval"
	// when nothing can move until the outside world acts.
	State    string          `json:"state"`
	Mode     rbtype.Mode     `json:"mode"`
	PlanHash string          `json:"plan_hash"`
	Version  int             `json:"version"`
	Inputs   json.RawMessage `json:"inputs"`
	Lineage  LineageView     `json:"lineage"`
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
	// NextActions is what would move the runbook, each with the rbd
	// command that does it (docs/design/semantics.md section 5).
	NextActions []ActionView `json:"next_actions"`
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

func lineageView(rb *driver.Runbook) LineageView {
	v := LineageView{Root: rb.Lineage.RootOf(rb.ID), Generation: rb.Lineage.Generation}
	if rb.Lineage.Parent != uuid.Nil {
		parent := rb.Lineage.Parent
		v.Parent = &parent
	}
	return v
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
	Kind    string `json:"kind"`
	Step    string `json:"step,omitempty"` // none for close
	Command string `json:"command"`
	// Message says what to do first, when the command alone would not
	// do: a step stopped by a budget needs it raised before a retry.
	Message string `json:"message,omitempty"`
	// Budget is the budget that is spent, for a step it stopped.
	Budget *BudgetView `json:"budget,omitempty"`
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
	AttemptID      *uuid.UUID      `json:"attempt_id,omitempty"`
	SpanID         string          `json:"span_id,omitempty"`
	Gate           rbtype.Gate     `json:"gate"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *ErrorView      `json:"error,omitempty"`
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

// Get returns a runbook's view, with its first DefaultViewSteps steps.
func (e *Engine) Get(ctx context.Context, id uuid.UUID) (*RunbookView, error) {
	return e.GetPage(ctx, id, driver.StepPage{Limit: DefaultViewSteps})
}

// GetPage returns a runbook's view showing the steps of page (by
// position, from 1): their states, results and outcomes. What the
// runbook waits for, its failures and its next actions are the whole
// runbook's, whatever the page. StepsTotal says how many steps there are,
// and StepsNext where the next page begins, if there is one: a runbook
// of thousands of steps is never read, nor answered, whole.
func (e *Engine) GetPage(ctx context.Context, id uuid.UUID, page driver.StepPage) (*RunbookView, error) {
	if page.Limit <= 0 || page.Limit > MaxViewSteps || page.After < 0 {
		return nil, fmt.Errorf("%w: steps_limit must be from 1 to %d and steps_after at least 0", rbtype.ErrInvalid, MaxViewSteps)
	}
	rb, err := e.visibleRunbook(ctx, id)
	if err != nil {
		return nil, err
	}
	cost, err := e.store.RunbookCost(ctx, id)
	if err != nil {
		return nil, err
	}
	steps, err := e.store.Steps(ctx, id, page)
	if err != nil {
		return nil, err
	}
	invs, err := e.store.InvocationsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	outcomes, err := e.store.Outcomes(ctx, id)
	if err != nil {
		return nil, err
	}
	plan, err := e.planOf(rb)
	if err != nil {
		return nil, err
	}
	v := buildView(rb, steps, invs, page, plan)
	v.Cost.Cost = cost
	for _, o := range outcomes {
		v.Produced = append(v.Produced, ProducedView{OutcomeID: o.ID, Type: o.Type, Status: o.Status, Preview: o.Preview,
			Step: o.StepKey, Version: o.Version})
	}
	if v.Cost.Budgets, err = e.budgetViews(ctx, rb); err != nil {
		return nil, err
	}
	explainBudgetRetries(v, rb.Tenant)
	if err := e.describeGates(ctx, rb, steps, v); err != nil {
		return nil, err
	}
	return v, nil
}

func buildView(rb *driver.Runbook, steps []*driver.Step, invs []driver.Invocation, page driver.StepPage, plan *machine.PlanInfo) *RunbookView {
	active := map[int64]driver.Invocation{}
	for _, inv := range invs {
		if inv.Status == rbtype.InvocationActive {
			active[inv.StepID] = inv
		}
	}
	v := &RunbookView{
		ID: rb.ID, Status: rb.Status, State: string(rb.Status), Mode: rb.Mode, PlanHash: rb.PlanHash, Version: rb.Version,
		Inputs: rb.Inputs, Lineage: lineageView(rb), CreatedAt: rb.CreatedAt, UpdatedAt: rb.UpdatedAt, FinishedAt: rb.FinishedAt,
		Name: rb.Name, Tenant: rb.Tenant, Actor: rb.Actor,
		Steps: make([]StepView, 0, min(len(steps), page.Limit)), Outcomes: map[string]json.RawMessage{}, BlockedOn: []BlockedView{},
		Failures: []FailureView{}, NextActions: []ActionView{}, Produced: []ProducedView{}, PolicyHash: rb.PolicyHash, Budget: rb.Budget,
		StepsTotal: len(steps),
	}
	if len(steps) > 0 && steps[len(steps)-1].Position > page.After+page.Limit {
		next := strconv.Itoa(page.After + page.Limit)
		v.StepsNext = &next
	}
	switch {
	case rb.ErrorCode == rbtype.CodeDraftOnly:
		v.Reason = &ErrorView{Code: rb.ErrorCode, Message: rb.ErrorMessage}
	case rb.ErrorCode != "":
		v.Error = &ErrorView{Code: rb.ErrorCode, Message: rb.ErrorMessage}
	}
	rt := machine.TraceOf(rb)
	v.TraceID, v.SpanID, v.CorrelationID = rt.Span.TraceID().String(), rt.Span.SpanID().String(), rt.CorrelationID
	if rt.Parent.IsValid() {
		v.ParentSpanID = rt.Parent.SpanID().String()
	}
	moving, approvals, parked := false, false, false
	status := make(map[string]rbtype.StepStatus, len(steps))
	for _, s := range steps {
		status[s.Key] = s.Status
	}
	for _, s := range steps {
		shown := s.Position > page.After && s.Position <= page.After+page.Limit
		sv := StepView{
			Key: s.Key, Verb: s.Verb, Status: s.Status, Attempt: s.Attempt, Gate: s.Gate, Simulated: s.Simulated,
			NextAttemptAt: s.NextAttemptAt, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
		}
		if s.Attempt > 0 {
			id := machine.AttemptID(rb.ID, s.Key, s.Attempt)
			sv.AttemptID, sv.SpanID = &id, machine.AttemptSpanID(id).String()
		}
		if s.Status == rbtype.StepComplete && shown {
			sv.Result = s.Result
			v.Outcomes[s.Key] = s.Result
		}
		if s.ErrorCode != "" {
			sv.Error = &ErrorView{Code: s.ErrorCode, Message: s.ErrorMessage}
		}
		if s.GateDecision != "" && s.GateDecidedAt != nil {
			sv.GateDecision = &GateDecision{Decision: s.GateDecision, By: s.GateDecidedBy, At: *s.GateDecidedAt, Comment: s.GateComment}
		}
		if s.CompensationStatus != "" {
			sv.Compensation = &Compensation{Status: s.CompensationStatus, Error: s.CompensationError}
		}
		if s.EscalationStatus != "" {
			sv.Escalation = &Compensation{Status: s.EscalationStatus, Error: s.EscalationError}
		}
		switch {
		case plan.IsHook(s.Key):
			sv.Kind = StepKindHook
		case plan.IsTemplate(s.Key):
			sv.Kind = StepKindTemplate
			sv.Iterations = iterations(plan, s.Key, status)
		}
		switch s.Status {
		case rbtype.StepWaitingApproval:
			approvals = true
			v.BlockedOn = append(v.BlockedOn, BlockedView{Step: s.Key, Reason: BlockedRequiresApproval})
			v.NextActions = append(v.NextActions, ActionView{Kind: ActionApprove, Step: s.Key,
				Command: fmt.Sprintf("rbd approve %s %s", rb.ID, shellQuote(s.Key))})
		case rbtype.StepParked:
			inv := active[s.ID]
			sv.CorrelationKey = inv.CorrelationKey
			if !inv.ParkedAt.IsZero() {
				sv.ParkedAt, sv.TimeoutAt = &inv.ParkedAt, &inv.TimeoutAt
			}
			if inv.Notified {
				// Its notification came; a worker resumes it next. It
				// waits on no one, so `rbd status --wait` does not stop
				// here.
				moving = true
				break
			}
			parked = true
			if until, ok := machine.TimerUntil(&inv); ok {
				v.BlockedOn = append(v.BlockedOn, BlockedView{Step: s.Key, Reason: BlockedAwaitingTimer, Until: &until})
			} else {
				v.BlockedOn = append(v.BlockedOn, BlockedView{Step: s.Key, Reason: BlockedAwaitingNotification, CorrelationKey: inv.CorrelationKey})
				v.NextActions = append(v.NextActions, ActionView{Kind: ActionNotify, Step: s.Key,
					Command: fmt.Sprintf("rbd notify %s --result '{...}'", inv.CorrelationKey)})
			}
		case rbtype.StepFailed, rbtype.StepEscalated:
			v.Failures = append(v.Failures, FailureView{Step: s.Key, Code: s.ErrorCode, Message: s.ErrorMessage})
			// An escalated step waits for a person's resolution while the
			// runbook can still take one; a failed step holds up its
			// dependents while the runbook runs. A finished runbook is
			// blocked on nothing else: its failures say what happened.
			resolvable := s.Status == rbtype.StepEscalated && (rb.Status.Running() || rb.Status == rbtype.RunbookEscalated)
			if resolvable || rb.Status.Running() {
				v.BlockedOn = append(v.BlockedOn, BlockedView{Step: s.Key, Reason: string(s.ErrorCode), Message: s.ErrorMessage})
			}
			if resolvable {
				v.NextActions = append(v.NextActions, ActionView{Kind: ActionResolve, Step: s.Key,
					Command: fmt.Sprintf("rbd resolve %s %s --action complete --result '{...}'", rb.ID, shellQuote(s.Key))})
			}
		case rbtype.StepReady, rbtype.StepRunning, rbtype.StepFailedRetryable:
			// Pending steps wait on these or on the outside world; only
			// these move without it.
			moving = true
		}
		if shown {
			v.Steps = append(v.Steps, sv)
		}
	}
	// A runbook that has ended but still runs its failure hooks waits on
	// a person or a notification as a running one does.
	if (rb.Status.Running() || machine.RunsHooks(rb.Status) && rb.FinishedAt == nil) && !moving {
		switch {
		case approvals:
			v.State = string(rbtype.StateAwaitingApproval)
		case parked:
			v.State = string(rbtype.StateParked)
		case rb.Status == rbtype.RunbookInProgress && allDone(steps):
			v.State = string(rbtype.StateHeldOpen)
		}
	}
	if rb.Status == rbtype.RunbookInProgress {
		v.NextActions = append(v.NextActions, ActionView{Kind: ActionClose, Command: fmt.Sprintf("rbd close %s", rb.ID)})
	}
	if retryableRunbook(rb, steps) {
		for _, s := range steps {
			if (s.Status == rbtype.StepFailed || s.Status == rbtype.StepEscalated) && retryMayHelp(s) && !plan.IsHook(s.Key) {
				// a hook runs once, and is not retried
				v.NextActions = append(v.NextActions, ActionView{Kind: ActionRetry, Step: s.Key,
					Command: fmt.Sprintf("rbd retry %s --step %s", rb.ID, shellQuote(s.Key))})
			}
		}
	}
	if rb.Mode == rbtype.ModeDraftOnly && !rb.Status.Running() && rb.Status != rbtype.RunbookCancelled {
		// What the draft did not run, for a person to run for real once
		// they have read the drafts.
		for _, s := range steps {
			// An escalation the draft skipped: the step, run for real,
			// pages for real if it times out again.
			if s.Status == rbtype.StepSkipped && s.ErrorCode == rbtype.CodeDraftOnly ||
				s.Status == rbtype.StepEscalated && s.EscalationStatus == rbtype.CompensationSkipped {
				v.NextActions = append(v.NextActions, ActionView{Kind: ActionRetry, Step: s.Key,
					Command: fmt.Sprintf("rbd retry %s --execute --step %s", rb.ID, shellQuote(s.Key))})
			}
		}
	}
	return v
}

// allDone reports whether every step has ended.
func allDone(steps []*driver.Step) bool {
	for _, s := range steps {
		if !s.Status.Done() {
			return false
		}
	}
	return true
}

// retryableRunbook reports whether Retry would take the runbook: finished
// failed, partial or escalated, with nothing compensated.
func retryableRunbook(rb *driver.Runbook, steps []*driver.Step) bool {
	switch rb.Status {
	case rbtype.RunbookFailed, rbtype.RunbookPartial, rbtype.RunbookEscalated, rbtype.RunbookInProgress:
	default:
		return false
	}
	if machine.RunsHooks(rb.Status) && rb.FinishedAt == nil {
		return false // its compensations or failure hooks still run
	}
	for _, s := range steps {
		if machine.Undone(s) {
			return false
		}
	}
	return true
}

// NoRetryCodes are the codes of a failure a retry would only repeat when
// the step failed before its handler was ever called (attempt 0): its
// arguments, resolved from its inputs and the results of completed steps,
// do not fit its verb's schema, do not encode, or name a field a result
// does not have. A retry resolves the same arguments from the same inputs
// and results, so no retry is offered for them; regenerating with other
// inputs, or a fixed runbook, is the way on. (POST .../retry still takes
// them.)
var NoRetryCodes = []rbtype.ErrorCode{rbtype.CodeSchemaValidationFailed, rbtype.CodeInvalidInput, rbtype.CodeMissingRequiredContext}

// retryMayHelp reports whether running a failed or escalated step again
// may end otherwise. The store's listing applies the same rule
// (durable's needsPersonSQL), given NoRetryCodes.
func retryMayHelp(s *driver.Step) bool {
	return s.Attempt > 0 || !slices.Contains(NoRetryCodes, s.ErrorCode)
}

// shellQuote quotes a step key for a shell when it needs it: keys of
// unnamed calls hold '#'.
func shellQuote(s string) string {
	if strings.ContainsAny(s, "#'\"\\ $`*?[]{}()<>|&;!~") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// Status returns a runbook's status, and whether it has finished: nothing
// more will happen to it (a failed runbook still running compensations has
// not). It is cheap: it loads neither the plan nor the steps.
func (e *Engine) Status(ctx context.Context, id uuid.UUID) (status rbtype.RunbookStatus, finished bool, err error) {
	st, err := e.state(ctx, id)
	return st.Status, st.Finished, err
}

// state is a runbook's narrow row, if the caller may see it.
func (e *Engine) state(ctx context.Context, id uuid.UUID) (driver.RunbookState, error) {
	st, err := e.store.RunbookStatus(ctx, id)
	if errors.Is(err, driver.ErrNotFound) || err == nil && !sees(ctx, st.Tenant) {
		return driver.RunbookState{}, e.noRunbook(ctx, id)
	}
	return st, err
}

// Events returns a runbook's ledger after an event id.
func (e *Engine) Events(ctx context.Context, id uuid.UUID, after int64, limit int) ([]driver.Event, error) {
	evs, _, err := e.TracedEvents(ctx, id, after, limit)
	return evs, err
}

// TracedEvents returns a runbook's ledger after an event id, with the
// trace context its events carry (docs/design/semantics.md section 2): the runbook's,
// read with its state rather than stored on every event.
func (e *Engine) TracedEvents(ctx context.Context, id uuid.UUID, after int64, limit int) ([]driver.Event, EventTrace, error) {
	// Only whether it exists, and its trace: the state is one narrow row,
	// the runbook row holds the whole plan.
	st, err := e.state(ctx, id)
	if err != nil {
		return nil, EventTrace{}, err
	}
	evs, err := e.store.Events(ctx, id, after, limit)
	return evs, EventTraceOf(id, st), err
}

// Costs sums the attempts of the caller's tenant's runbooks (an admin's:
// tenant's, or every tenant's for "") by tenant, actor, verb, day or
// month, finished in [from, to) when given (docs/design/semantics.md section 3).
func (e *Engine) Costs(ctx context.Context, groupBy, tenant string, from, to *time.Time) ([]driver.Cost, error) {
	if !slices.Contains(driver.CostGroups, groupBy) {
		return nil, fmt.Errorf("%w: group_by %q must be one of %s", rbtype.ErrInvalid, groupBy, strings.Join(driver.CostGroups, ", "))
	}
	return e.store.Costs(ctx, driver.CostQuery{GroupBy: groupBy, Tenant: listTenant(ctx, tenant), From: from, To: to})
}

// iterations counts a template's instances by status; nil before its
// list is known.
func iterations(plan *machine.PlanInfo, key string, status map[string]rbtype.StepStatus) *Iterations {
	n := plan.Instances[key]
	if n == 0 {
		return nil
	}
	it := &Iterations{Count: n}
	for i := range n {
		switch status[machine.InstanceKey(key, i)] {
		case rbtype.StepComplete:
			it.Done++
		case rbtype.StepFailed, rbtype.StepEscalated:
			it.Failed++
		case rbtype.StepReady, rbtype.StepRunning, rbtype.StepParked, rbtype.StepWaitingApproval, rbtype.StepFailedRetryable:
			it.Running++
		}
	}
	return it
}
