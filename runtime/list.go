package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// ListQuery selects a page of runbooks, newest first.
type ListQuery struct {
	// Status keeps the runbooks in a status; State those in a state as
	// the view says it: a status, or a running runbook's refined state
	// (parked, awaiting_approval, held_open).
	Status rbtype.RunbookStatus
	State  string
	// NeedsPerson, when set, keeps the runbooks that wait on a person
	// (true: a gate to decide, an escalation to resolve, a failure a
	// retry may fix, a draft to run for real) or the others (false).
	NeedsPerson *bool
	// Tenant is an admin's choice of tenant ("" for all); other callers
	// list their own tenant's whatever it says.
	Tenant string
	Limit  int
	After  string
}

// listStates are the states a listing may be filtered by beyond the
// statuses.
var listStates = []rbtype.RunbookState{rbtype.StateAwaitingApproval, rbtype.StateParked, rbtype.StateHeldOpen, rbtype.StateInDoubt}

// List returns a page of runbooks, newest first: the caller's tenant's,
// or, for an admin, q.Tenant's ("" for every tenant's), each with what it
// waits on.
func (e *Engine) List(ctx context.Context, q ListQuery) (*apitype.RunbookList, error) {
	if q.Status != "" && !slices.Contains(rbtype.RunbookStatuses, q.Status) {
		return nil, fmt.Errorf("%w: status %q is not one of %s", rbtype.ErrInvalid, q.Status, joinStatuses(rbtype.RunbookStatuses))
	}
	dq := driver.RunbookQuery{Status: q.Status, Tenant: listTenant(ctx, q.Tenant), Limit: q.Limit, After: q.After,
		NeedsPerson: q.NeedsPerson, NoRetryCodes: NoRetryCodes}
	switch st := rbtype.RunbookStatus(q.State); {
	case q.State == "":
	case slices.Contains(listStates, rbtype.RunbookState(q.State)), st == rbtype.RunbookExecuting, st == rbtype.RunbookInProgress:
		// A running runbook's state is worked out from its steps.
		dq.State = q.State
	case slices.Contains(rbtype.RunbookStatuses, st):
		// A finished runbook's state is its status.
		if q.Status != "" && q.Status != st {
			return &apitype.RunbookList{}, nil
		}
		dq.Status = st
	default:
		names := []string{joinStatuses(rbtype.RunbookStatuses)}
		for _, s := range listStates {
			names = append(names, string(s))
		}
		return nil, fmt.Errorf("%w: state %q is not one of %s", rbtype.ErrInvalid, q.State, strings.Join(names, ", "))
	}
	page, err := e.reader(ctx).ListRunbooks(ctx, dq)
	if errors.Is(err, driver.ErrBadRequest) {
		return nil, fmt.Errorf("%w: %v", rbtype.ErrInvalid, err)
	}
	if err != nil {
		return nil, err
	}
	out := &apitype.RunbookList{Runbooks: make([]apitype.RunbookSummary, 0, len(page.Runbooks)), Next: page.Next}
	if len(page.Runbooks) == 0 {
		return out, nil
	}
	ids := make([]uuid.UUID, len(page.Runbooks))
	for i, rb := range page.Runbooks {
		ids[i] = rb.ID
	}
	steps, err := e.reader(ctx).StepStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	invs, err := e.reader(ctx).ActiveInvocations(ctx, ids)
	if err != nil {
		return nil, err
	}
	stepsOf := map[uuid.UUID][]*driver.Step{}
	for _, s := range steps {
		stepsOf[s.RunbookID] = append(stepsOf[s.RunbookID], s)
	}
	invsOf := map[uuid.UUID][]driver.Invocation{}
	for _, inv := range invs {
		invsOf[inv.RunbookID] = append(invsOf[inv.RunbookID], inv)
	}
	for _, rb := range page.Runbooks {
		plan := e.listedPlan(rb)
		v := buildView(rb, stepsOf[rb.ID], invsOf[rb.ID], driver.StepPage{Limit: len(stepsOf[rb.ID])}, plan)
		if plan.Plan == nil && restrictsDecisions(ctx) && offersRestricted(v.NextActions) {
			// Whether this token may take them is the plan's to say
			// (a step's risk, its :approvers): read the plan the
			// listing left out.
			if plan, err = e.planOfListed(ctx, rb); err != nil {
				return nil, err
			}
		}
		offerTo(ctx, v, stepsOf[rb.ID], plan)
		out.Runbooks = append(out.Runbooks, summarize(v))
	}
	return out, nil
}

// offersRestricted reports whether actions hold one a token's scope may
// refuse (an approve, a retry): offerTo needs the plan to judge it.
func offersRestricted(actions []apitype.ActionView) bool {
	for _, a := range actions {
		if a.Kind == apitype.ActionApprove || a.Kind == apitype.ActionRetry {
			return true
		}
	}
	return false
}

// planOfListed reads and decodes the plan of a listed runbook, which the
// listing read without it.
func (e *Engine) planOfListed(ctx context.Context, listed *driver.Runbook) (*machine.PlanInfo, error) {
	rb, err := e.reader(ctx).Runbook(ctx, listed.ID)
	if err != nil {
		return nil, err
	}
	return e.planOf(rb)
}

// summarize is the listing's part of a view.
func summarize(v *apitype.RunbookView) apitype.RunbookSummary {
	sum := apitype.RunbookSummary{
		ID: v.ID, Name: v.Name, Tenant: v.Tenant, Actor: v.Actor, Status: v.Status, State: v.State, Mode: v.Mode,
		PlanHash: v.PlanHash, Version: v.Version, Error: v.Error, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
		FinishedAt: v.FinishedAt, BlockedOn: v.BlockedOn, NextActions: v.NextActions, UnavailableActions: v.UnavailableActions,
	}
	// A runbook waits on a person whether or not the token asking is the
	// one: a gate of another group is still in someone's inbox.
	sum.NeedsPerson = NeedsPerson(v.NextActions) || NeedsPerson(v.UnavailableActions)
	return sum
}

// NeedsPerson reports whether a runbook with these next actions waits on
// a person: a gate to approve, an escalation to resolve, a retry to ask
// for. (A notification is the outside world's to send, and closing a
// held-open runbook its agent's.)
func NeedsPerson(actions []apitype.ActionView) bool {
	for _, a := range actions {
		switch a.Kind {
		case apitype.ActionApprove, apitype.ActionResolve, apitype.ActionRetry:
			return true
		}
	}
	return false
}

func joinStatuses(statuses []rbtype.RunbookStatus) string {
	names := make([]string, len(statuses))
	for i, s := range statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// listedPlan is a listed runbook's plan when the plan cache has it: a
// listing reads no plans, so one not cached is described without it (its
// hooks and templates not told apart from its other steps).
func (e *Engine) listedPlan(rb *driver.Runbook) *machine.PlanInfo {
	if info, ok := e.plans.lookup(rb.PlanHash); ok {
		return info
	}
	return &machine.PlanInfo{}
}
