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

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

func lineageView(rb *driver.Runbook) apitype.LineageView {
	v := apitype.LineageView{Root: rb.Lineage.RootOf(rb.ID), Generation: rb.Lineage.Generation}
	if rb.Lineage.Parent != uuid.Nil {
		parent := rb.Lineage.Parent
		v.Parent = &parent
	}
	return v
}

// Get returns a runbook's view, with its first DefaultViewSteps steps.
func (e *Engine) Get(ctx context.Context, id uuid.UUID) (*apitype.RunbookView, error) {
	return e.GetPage(ctx, id, driver.StepPage{Limit: apitype.DefaultViewSteps})
}

// GetPage returns a runbook's view showing the steps of page (by
// position, from 1): their states, results and outcomes. What the
// runbook waits for, its failures and its next actions are the whole
// runbook's, whatever the page. StepsTotal says how many steps there are,
// and StepsNext where the next page begins, if there is one: a runbook
// of thousands of steps is never read, nor answered, whole.
func (e *Engine) GetPage(ctx context.Context, id uuid.UUID, page driver.StepPage) (*apitype.RunbookView, error) {
	if page.Limit <= 0 || page.Limit > apitype.MaxViewSteps || page.After < 0 {
		return nil, fmt.Errorf("%w: steps_limit must be from 1 to %d and steps_after at least 0", rbtype.ErrInvalid, apitype.MaxViewSteps)
	}
	// Every read of the view sees one snapshot: a runbook's status is never
	// shown beside steps, a cost or outcomes of another moment.
	var (
		rb       *driver.Runbook
		cost     driver.Cost
		steps    []*driver.Step
		invs     []driver.Invocation
		outcomes []driver.Outcome
		tbs      map[string]driver.TenantBudget
	)
	err := e.reader(ctx).ReadView(ctx, func(r driver.ViewReader) (err error) {
		if rb, err = visibleRunbookIn(ctx, r, id); err != nil {
			return err
		}
		if cost, err = r.RunbookCost(ctx, id); err != nil {
			return err
		}
		if steps, err = r.Steps(ctx, id, page); err != nil {
			return err
		}
		if invs, err = r.InvocationsOf(ctx, id); err != nil {
			return err
		}
		if outcomes, err = r.Outcomes(ctx, id); err != nil {
			return err
		}
		tbs, err = r.TenantBudgets(ctx, []string{rb.Tenant}, e.cfg.Clock())
		return err
	})
	if errors.Is(err, driver.ErrNotFound) {
		return nil, e.noRunbook(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	plan, err := e.planOf(rb)
	if err != nil {
		return nil, err
	}
	v := buildView(rb, steps, invs, page, plan)
	v.Cost.Cost = apiCost(cost)
	for _, o := range outcomes {
		v.Produced = append(v.Produced, apitype.ProducedView{OutcomeID: o.ID, Type: o.Type, Status: o.Status, Preview: o.Preview,
			Step: o.StepKey, Version: o.Version})
	}
	v.Cost.Budgets = e.budgetViews(rb, tbs)
	explainBudgetRetries(v, rb.Tenant)
	offerTo(ctx, v, steps, plan)
	if err := e.describeGates(ctx, rb, steps, v); err != nil {
		return nil, err
	}
	return v, nil
}

func buildView(rb *driver.Runbook, steps []*driver.Step, invs []driver.Invocation, page driver.StepPage, plan *machine.PlanInfo) *apitype.RunbookView {
	active := map[int64]driver.Invocation{}
	for _, inv := range invs {
		if inv.Status == rbtype.InvocationActive {
			active[inv.StepID] = inv
		}
	}
	v := &apitype.RunbookView{
		ID: rb.ID, Status: rb.Status, State: rbtype.RunbookState(rb.Status), Mode: rb.Mode, PlanHash: rb.PlanHash, Version: rb.Version,
		Inputs: rb.Inputs, Lineage: lineageView(rb), CreatedAt: rb.CreatedAt, UpdatedAt: rb.UpdatedAt, FinishedAt: rb.FinishedAt,
		Name: rb.Name, Tenant: rb.Tenant, Actor: rb.Actor,
		Steps: make([]apitype.StepView, 0, min(len(steps), page.Limit)), Outcomes: map[string]json.RawMessage{}, BlockedOn: []apitype.BlockedView{},
		Failures: []apitype.FailureView{}, NextActions: []apitype.ActionView{}, UnavailableActions: []apitype.ActionView{}, Produced: []apitype.ProducedView{}, PolicyHash: rb.PolicyHash, Budget: rb.Budget,
		StepsTotal: len(steps),
	}
	if len(steps) > 0 && steps[len(steps)-1].Position > page.After+page.Limit {
		next := strconv.Itoa(page.After + page.Limit)
		v.StepsNext = &next
	}
	switch {
	case rb.ErrorCode == rbtype.CodeDraftOnly:
		v.Reason = &apitype.ErrorView{Code: rb.ErrorCode, Message: rb.ErrorMessage}
	case rb.ErrorCode != "":
		v.Error = &apitype.ErrorView{Code: rb.ErrorCode, Message: rb.ErrorMessage}
	}
	rt := machine.TraceOf(rb)
	v.TraceID, v.SpanID, v.CorrelationID = rt.Span.TraceID().String(), rt.Span.SpanID().String(), rt.CorrelationID
	if rt.Parent.IsValid() {
		v.ParentSpanID = rt.Parent.SpanID().String()
	}
	moving, approvals, parked, doubt := false, false, false, false
	status := make(map[string]rbtype.StepStatus, len(steps))
	for _, s := range steps {
		status[s.Key] = s.Status
	}
	for _, s := range steps {
		shown := s.Position > page.After && s.Position <= page.After+page.Limit
		sv := apitype.StepView{
			Key: s.Key, Verb: s.Verb, Status: s.Status, Attempt: s.Attempt, Gate: s.Gate, Simulated: s.Simulated, DryRun: s.Simulated,
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
			sv.Error = &apitype.ErrorView{Code: s.ErrorCode, Message: s.ErrorMessage}
		}
		if s.GateDecision != "" && s.GateDecidedAt != nil {
			sv.GateDecision = &apitype.GateDecision{Decision: s.GateDecision, By: s.GateDecidedBy, At: *s.GateDecidedAt, Comment: s.GateComment}
		}
		if s.CompensationStatus != "" {
			sv.Compensation = &apitype.Compensation{Status: s.CompensationStatus, Error: s.CompensationError}
		}
		if s.EscalationStatus != "" {
			sv.Escalation = &apitype.Compensation{Status: s.EscalationStatus, Error: s.EscalationError}
		}
		switch {
		case plan.IsHook(s.Key):
			sv.Kind = apitype.StepKindHook
		case plan.IsTemplate(s.Key):
			sv.Kind = apitype.StepKindTemplate
			sv.Iterations = iterations(plan, s.Key, status)
		}
		switch s.Status {
		case rbtype.StepWaitingApproval:
			approvals = true
			v.BlockedOn = append(v.BlockedOn, apitype.BlockedView{Step: s.Key, Reason: apitype.BlockedRequiresApproval})
			v.NextActions = append(v.NextActions, apitype.NewAction(apitype.ActionApprove, s.Key, apitype.ActionArgs{RunbookID: rb.ID}))
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
			if inv.Attached {
				// A twin: no one outside knows its key; the wait it is
				// attached to answers it (machine's twins.go).
				v.BlockedOn = append(v.BlockedOn, apitype.BlockedView{Step: s.Key, Reason: apitype.BlockedAwaitingNotification, CorrelationKey: inv.CorrelationKey,
					Message: "attached to another runbook's wait under the same idempotency key: it completes with that wait's result"})
			} else if until, ok := machine.TimerUntil(&inv); ok {
				v.BlockedOn = append(v.BlockedOn, apitype.BlockedView{Step: s.Key, Reason: apitype.BlockedAwaitingTimer, Until: &until})
			} else {
				v.BlockedOn = append(v.BlockedOn, apitype.BlockedView{Step: s.Key, Reason: apitype.BlockedAwaitingNotification, CorrelationKey: inv.CorrelationKey})
				v.NextActions = append(v.NextActions, apitype.NewAction(apitype.ActionNotify, s.Key, apitype.ActionArgs{RunbookID: rb.ID, CorrelationKey: inv.CorrelationKey}))
			}
		case rbtype.StepFailed, rbtype.StepEscalated:
			v.Failures = append(v.Failures, apitype.FailureView{Step: s.Key, Code: s.ErrorCode, Message: s.ErrorMessage})
			// An escalated step waits for a person's resolution while the
			// runbook can still take one; a failed step holds up its
			// dependents while the runbook runs. A finished runbook is
			// blocked on nothing else: its failures say what happened.
			resolvable := s.Status == rbtype.StepEscalated && (rb.Status.Running() || rb.Status == rbtype.RunbookEscalated)
			if resolvable || rb.Status.Running() {
				v.BlockedOn = append(v.BlockedOn, apitype.BlockedView{Step: s.Key, Reason: string(s.ErrorCode), Message: s.ErrorMessage})
			}
			if resolvable {
				v.NextActions = append(v.NextActions, apitype.NewAction(apitype.ActionResolve, s.Key, apitype.ActionArgs{RunbookID: rb.ID}))
			}
		case rbtype.StepInDoubt:
			doubt = true
			// Its call may have happened: a person says what became of it.
			v.BlockedOn = append(v.BlockedOn, apitype.BlockedView{Step: s.Key, Reason: apitype.BlockedInDoubt,
				Message: "its call may have reached a provider that ignores idempotency keys; resolve it: complete (it happened), retry (it did not), or fail"})
			v.NextActions = append(v.NextActions, apitype.NewAction(apitype.ActionResolve, s.Key, apitype.ActionArgs{RunbookID: rb.ID}))
		case rbtype.StepReady:
			if s.ErrorCode == rbtype.CodeBudgetExceeded {
				// Held: starting it would pass a budget with what it
				// reserves; it starts by itself once the budget allows.
				v.BlockedOn = append(v.BlockedOn, apitype.BlockedView{Step: s.Key, Reason: string(s.ErrorCode), Message: s.ErrorMessage})
				break
			}
			moving = true
		case rbtype.StepRunning, rbtype.StepFailedRetryable:
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
			v.State = rbtype.StateAwaitingApproval
		case doubt:
			v.State = rbtype.StateInDoubt
		case parked:
			v.State = rbtype.StateParked
		case rb.Status == rbtype.RunbookInProgress && allDone(steps):
			v.State = rbtype.StateHeldOpen
		}
	}
	if rb.Status == rbtype.RunbookInProgress {
		v.NextActions = append(v.NextActions, apitype.NewAction(apitype.ActionClose, "", apitype.ActionArgs{RunbookID: rb.ID}))
	}
	if retryableRunbook(rb, steps) {
		for _, s := range steps {
			if (s.Status == rbtype.StepFailed || s.Status == rbtype.StepEscalated) && retryMayHelp(s) && !plan.IsHook(s.Key) {
				// a hook runs once, and is not retried
				v.NextActions = append(v.NextActions, apitype.NewAction(apitype.ActionRetry, s.Key, apitype.ActionArgs{RunbookID: rb.ID}))
			}
		}
	}
	if rb.Mode == rbtype.ModeDraftOnly && !rb.Status.Running() && rb.Status != rbtype.RunbookCancelled && endedForRetry(rb, steps) {
		// What the draft did not run, for a person to run for real once
		// they have read the drafts.
		for _, s := range steps {
			// An escalation the draft skipped: the step, run for real,
			// pages for real if it times out again.
			// A hook is not named: it runs once, after a failure of the
			// runbook run for real.
			if plan.IsHook(s.Key) {
				continue
			}
			if s.Status == rbtype.StepSkipped && s.ErrorCode == rbtype.CodeDraftOnly ||
				s.Status == rbtype.StepEscalated && s.EscalationStatus == rbtype.CompensationSkipped {
				v.NextActions = append(v.NextActions, apitype.NewAction(apitype.ActionRetry, s.Key, apitype.ActionArgs{RunbookID: rb.ID, Execute: true}))
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
	return endedForRetry(rb, steps)
}

// endedForRetry reports whether what follows a runbook's end has run (its
// compensations, its failure hooks) and undid nothing: only then is a
// retry, or a retry --execute, accepted (machine.RetryRunbook).
func endedForRetry(rb *driver.Runbook, steps []*driver.Step) bool {
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

// Status returns a runbook's status, and whether it has finished: nothing
// more will happen to it (a failed runbook still running compensations has
// not). It is cheap: it loads neither the plan nor the steps.
func (e *Engine) Status(ctx context.Context, id uuid.UUID) (status rbtype.RunbookStatus, finished bool, err error) {
	st, err := e.state(ctx, id)
	return st.Status, st.Finished, err
}

// state is a runbook's narrow row, if the caller may see it.
func (e *Engine) state(ctx context.Context, id uuid.UUID) (driver.RunbookState, error) {
	st, err := e.reader(ctx).RunbookStatus(ctx, id)
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
	evs, err := e.reader(ctx).Events(ctx, id, after, limit)
	return evs, EventTraceOf(id, st), err
}

// Costs sums the attempts of the caller's tenant's runbooks (an admin's:
// tenant's, or every tenant's for "") by tenant, actor, verb, day or
// month, finished in [from, to) when given (docs/design/semantics.md section 3).
func (e *Engine) Costs(ctx context.Context, groupBy, tenant string, from, to *time.Time) ([]apitype.Cost, error) {
	if !slices.Contains(driver.CostGroups, groupBy) {
		return nil, fmt.Errorf("%w: group_by %q must be one of %s", rbtype.ErrInvalid, groupBy, strings.Join(driver.CostGroups, ", "))
	}
	rows, err := e.reader(ctx).Costs(ctx, driver.CostQuery{GroupBy: groupBy, Tenant: listTenant(ctx, tenant), From: from, To: to})
	if err != nil {
		return nil, err
	}
	out := make([]apitype.Cost, len(rows))
	for i, c := range rows {
		out[i] = apiCost(c)
	}
	return out, nil
}

// iterations counts a template's instances by status; nil before its
// list is known.
func iterations(plan *machine.PlanInfo, key string, status map[string]rbtype.StepStatus) *apitype.Iterations {
	n := plan.Instances[key]
	if n == 0 {
		return nil
	}
	it := &apitype.Iterations{Count: n}
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
