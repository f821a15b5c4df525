package driver

import (
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// RunbookPage is one page of a runbook listing.
type RunbookPage struct {
	Runbooks []*Runbook // without plans, newest first
	// Next is the cursor of the next page, empty on the last.
	Next string
}

// WaitTarget is what a correlation key waits on: the invocation's runbook,
// its plan's hash, the step and its verb, and whether the wait is active.
type WaitTarget struct {
	RunbookID uuid.UUID
	Tenant    string // the runbook's
	PlanHash  string
	StepKey   string
	Verb      string
	Status    rbtype.InvocationStatus
}

// RunbookState is a runbook's status, whether it has finished (nothing
// more will happen to it), and its tenant: what a live event stream polls,
// without the plan.
type RunbookState struct {
	Status   rbtype.RunbookStatus
	Finished bool
	Tenant   string
	// TraceID and CorrelationID are the runbook's (Trace), for the
	// events read with its state.
	TraceID, CorrelationID string
}

// RunbookQuery selects a page of runbooks, newest first: those in a
// status and of a tenant ("" for any), after a cursor from a previous
// page, and optionally only those in a refined state or those that do, or
// do not, wait on a person.
type RunbookQuery struct {
	Status rbtype.RunbookStatus
	Tenant string
	Limit  int
	After  string
	// State, when set, is a refined state of a running runbook
	// (StateAwaitingApproval, StateParked, StateHeldOpen) or
	// RunbookExecuting for one that moves by itself: as the view's state
	// says.
	State string
	// NeedsPerson, when set, keeps only the runbooks that wait on a
	// person (true) or only the others (false); see NeedsPersonRule.
	NeedsPerson *bool
	// NoRetryCodes are the failure codes a retry would repeat when the
	// step never called its handler (attempt 0), for which no retry is
	// offered (and so no person is waited on): the view's rule, passed
	// down so that the store applies the same.
	NoRetryCodes []rbtype.ErrorCode
}

// Cost is a sum over attempts: what they used, how many there were, how
// many were cache hits.
type Cost struct {
	Group     string  `json:"group,omitempty"`
	CostUSD   float64 `json:"cost_usd"`
	Credits   float64 `json:"credits"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Attempts  int64   `json:"attempts"`
	CacheHits int64   `json:"cache_hits"`
}

// CostQuery groups attempts finished in [From, To) by one of CostGroups
// (day and month are UTC), for one tenant ("" for all).
type CostQuery struct {
	GroupBy  string
	Tenant   string
	From, To *time.Time
}

// BudgetChange is an admin's change of one of a tenant's budgets: Budget
// nil takes the set one away (the policy's applies again).
type BudgetChange struct {
	Tenant string
	Scope  rbtype.BudgetScope
	Budget *rbtype.Budget
	Actor  string
}

// SetBudget is one budget an admin set, with who and when.
type SetBudget struct {
	Tenant    string             `json:"tenant"`
	Scope     rbtype.BudgetScope `json:"scope"`
	Budget    rbtype.Budget      `json:"budget"`
	UpdatedBy string             `json:"updated_by"`
	UpdatedAt time.Time          `json:"updated_at"`
}

// CostGroups are what a CostQuery may group by: a store knows each, and
// refuses anything else with ErrBadRequest.
var CostGroups = []string{"tenant", "actor", "verb", "day", "month"}
