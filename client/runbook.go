package client

import (
	"github.com/runbookdev/runbook/apitype"
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
type Runbook = apitype.RunbookView

// Lineage is where a runbook came from: an original is its own root, with
// no parent and generation 0; each regeneration is one generation more
// than its parent.
type Lineage = apitype.LineageView

// Cost is what attempts used, summed: a runbook's, or a group's in GET
// /v1/costs (whose Group names it).
type Cost = apitype.CostView

// BudgetState is one budget as a runbook meets it: its cap, what was
// spent against it, what is left, where it comes from (a policy's rule,
// the budget an admin set, the runbook's own), and whether it is spent.
type BudgetState = apitype.BudgetView

// ErrorInfo is a failure's code and message: a runbook's, a step's, or
// what a failed notification reports.
type ErrorInfo = apitype.ErrorView

// Step is one step of a runbook.
type Step = apitype.StepView

// Iterations counts a for-each template's instances: all, completed,
// under way, and failed.
type Iterations = apitype.Iterations

// GateDecision is who decided a gate, when, and why.
type GateDecision = apitype.GateDecision

// Compensation is the state of a step's undoing, or of its escalation.
type Compensation = apitype.Compensation

// Blocked is one thing a runbook waits for, or where it failed.
type Blocked = apitype.BlockedView

// Why a step waits at a gate (Gate.Why, StepDetail.GateWhy).
const (
	GatePolicy = "policy" // the tenant's policy gated it when the plan was admitted
	GateRisk   = "risk"   // its verb is risk high, and a high-risk step always waits
	GateVerb   = "verb"   // its verb declares gate: human_confirm
	GateCall   = "call"   // the runbook's call asks for it (:gate "human_confirm")
)

// Gate is what a step waiting at a gate will do, to what, with which
// arguments, and why it waits.
type Gate = apitype.GateView

// Failure is a step that failed or escalated.
type Failure = apitype.FailureView

// Action is one thing that would move a runbook: its kind (one of the
// Action... constants), its step (none for close), and the rbd command
// that does it.
type Action = apitype.ActionView

// RunbookSummary is one runbook in a list: what identifies it, and what
// it waits on, as its view says it (without a gate's details).
type RunbookSummary = apitype.RunbookSummary
