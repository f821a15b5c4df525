package machine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/rbtype"
)

// Budgets hold under concurrency (docs/design/semantics.md, "The forms
// compose"). An attempt of a verb that declares a cost (cost: {usd: N} in
// its verb file) reserves it in the transaction that starts it, and gives
// it back when its lease ends (its outcome, or a reclaim); what it reports
// it used is spent as before. Reservations are added to the runbook's and
// the tenant's spend as usage is (rbtype.Reservation), so every later
// start sees them, in this round (spentHere) and in others: an advance of
// a tenant with a day or month budget locks the tenant as it loads, so
// two workers cannot both start against the same remainder. A step whose
// reservation would pass a cap does not start: it stays ready, shows
// BUDGET_EXCEEDED in blocked_on, and is looked at again every
// BudgetRecheck, starting by itself once the budget is raised or what runs
// now has spent less than it reserved. However many steps start together,
// spend passes a cap by no more than what the attempts spent beyond what
// they reserved. A call whose worker died is called again without being
// judged again: the budget admitted its attempt when it started, and an
// attempt already running finishes. It keeps its reservation, and counts
// as running for the steps that start beside it.

// BudgetRecheck is how often a step held by a budget is looked at again.
const BudgetRecheck = 30 * time.Second

// declaredCost is what an attempt of s reserves: its verb's declared cost
// in US dollars, 0 for none; a dry run's calls spend nothing.
func (t *transition) declaredCost(s *rbtype.Step) float64 {
	if t.plan == nil || t.Rb.Mode == rbtype.ModeDryRun {
		return 0
	}
	if info := t.plan.Plan.Verbs[s.Verb]; info != nil && info.Cost != nil {
		return info.Cost.USD
	}
	return 0
}

// reserve records a change of what s's runbook and tenant reserved.
func (t *transition) reserve(s *rbtype.Step, usd float64) {
	day := t.Now
	if usd < 0 && s.StartedAt != nil {
		day = *s.StartedAt // given back on the day it was taken
	}
	t.reservations = append(t.reservations, rbtype.Reservation{RunbookID: t.Rb.ID, Tenant: t.Rb.Tenant, Day: day, CostUSD: usd})
}

// release gives back what s's attempt, now ending, reserved: its
// declared cost, or its place among the tenant's attempts that reserved
// nothing (budget_unreserved.go).
func (t *transition) release(s *rbtype.Step) {
	if c := t.declaredCost(s); c > 0 {
		t.reserve(s, -c)
	} else if t.countsUnreserved(s) {
		t.countUnreserved(-1, false)
	}
}

// releaseUnstartedReclaims gives back the reservations of the calls this
// round reclaimed and did not make again (a policy tightened since, a
// cancel): a reclaimed call keeps its reservation only while it is called
// again.
func (t *transition) releaseUnstartedReclaims() {
	for id := range t.reclaimed {
		if s := t.byID[id]; s != nil && s.Status != rbtype.StepRunning {
			t.release(s)
		}
	}
}

// reservedHere is what this round changed of the runbook's reservations.
func (t *transition) reservedHere() float64 {
	var sum float64
	for _, r := range t.reservations {
		sum += r.CostUSD
	}
	return sum
}

// heldByBudget reports whether s, about to start, would pass a cost
// budget with its reservation; if so it stays ready, marked
// BUDGET_EXCEEDED (the event once), and the runbook is looked at again
// later.
func (t *transition) heldByBudget(s *rbtype.Step) bool {
	if t.book == nil || t.plan == nil || t.Rb.Mode == rbtype.ModeDryRun {
		return false
	}
	cost := t.declaredCost(s)
	var reach *budgetReach
	if cost > 0 {
		reach = t.book.wouldPass(t, cost)
	} else {
		reach = t.unreservedRunning(s)
	}
	if reach == nil {
		if s.ErrorCode == rbtype.CodeBudgetExceeded {
			s.ErrorCode, s.ErrorMessage = "", ""
			t.touch(s)
		}
		return false
	}
	t.budgetHeld = true
	if s.ErrorCode != rbtype.CodeBudgetExceeded {
		t.m.Observe.BudgetExceeded(reach.Scope)
		t.event(rbtype.EventBudgetExceeded, s, BudgetExceededData{
			Budget: reach.Scope, Measure: reach.Measure, Limit: json.Number(reach.Limit), Spent: json.Number(reach.Spent), Rule: reach.Rule})
		s.ErrorCode = rbtype.CodeBudgetExceeded
		s.ErrorMessage = fmt.Sprintf("starting it would reserve %s and pass the %s budget (%s %s of %s with what runs now; %s): it waits, and starts by itself once the budget is raised (rbd budget set --tenant %s --%s AMOUNT) or what runs now has spent less than it reserved",
			rbtype.FormatMoney(cost), reach.Scope, reach.Measure, reach.Spent, reach.Limit, reach.Rule, t.Rb.Tenant, reach.Scope)
		if cost <= 0 {
			s.ErrorMessage = fmt.Sprintf("its verb declares no cost, and another step whose verb declares none is running under the %s budget (%s %s of %s; %s): it starts once that one has ended, so that the budget is passed by one attempt at most; declare cost: {usd: N} in the verb file to run such steps side by side",
				reach.Scope, reach.Measure, reach.Spent, reach.Limit, reach.Rule)
		}
		t.touch(s)
	}
	return true
}

// wouldPass is the first cost budget that an attempt reserving cost would
// pass, counting what is spent and reserved: the runbook's, the day's,
// the month's; nil when none.
func (b *BudgetBook) wouldPass(t *transition, cost float64) *budgetReach {
	tenant := t.Rb.Tenant
	runbook, rule := b.runbookLimit(t)
	if reach := passes(runbook, t.runbookSpent().CostUSD, cost, rbtype.BudgetRunbook, rule); reach != nil {
		return reach
	}
	for _, scope := range []rbtype.BudgetScope{rbtype.BudgetDay, rbtype.BudgetMonth} {
		limit, rule := b.Limit(tenant, scope)
		if limit.CostUSD == nil {
			continue
		}
		if reach := passes(limit, b.tenantSpent(tenant, scope).CostUSD, cost, scope, rule); reach != nil {
			return reach
		}
	}
	return nil
}

// unreservedRunning is the cost budget under which s, whose verb declares
// no cost, may not start: another such step is running. An attempt that
// reserved nothing may spend anything, so under a cost cap such attempts
// run one at a time; what they pass the cap by is then one attempt's
// spend at most. Under the runbook's cap that is held within the runbook.
// Under the tenant's day or month cap it is held among all the tenant's
// runbooks: those this round advances by their steps, the others by the
// durable count the load read under the tenant's lock
// (budget_unreserved.go). A step held for the tenant's marks its runbook
// waiting, to be woken as soon as one of them ends.
func (t *transition) unreservedRunning(s *rbtype.Step) *budgetReach {
	runbook, rule := t.book.runbookLimit(t)
	if runbook.CostUSD != nil && t.runsUnreserved(s) {
		return costReach(rbtype.BudgetRunbook, *runbook.CostUSD, t.runbookSpent().CostUSD, rule)
	}
	tenant := t.Rb.Tenant
	for _, scope := range []rbtype.BudgetScope{rbtype.BudgetDay, rbtype.BudgetMonth} {
		limit, rule := t.book.Limit(tenant, scope)
		if limit.CostUSD == nil {
			continue // no steps looked at for a tenant with no cost cap: the common case
		}
		if !t.runsUnreserved(s) {
			if !t.book.tenantRunsUnreserved(t) {
				return nil
			}
			t.countUnreserved(0, true) // woken when another runbook's ends; its own end would wake it
		}
		return costReach(scope, *limit.CostUSD, t.book.tenantSpent(tenant, scope).CostUSD, rule)
	}
	return nil
}

// costReach is a reach of a cost cap limit with spent spent.
func costReach(scope rbtype.BudgetScope, limit, spent float64, rule string) *budgetReach {
	return &budgetReach{Scope: scope, Measure: rbtype.MeasureCostUSD, Limit: rbtype.FormatMoney(limit),
		Spent: rbtype.FormatMoney(rbtype.Money(spent)), Rule: rule}
}

// runsUnreserved reports whether a step of t other than s, whose verb
// declares no cost, is running (or, reclaimed in this round, is to be
// called again).
func (t *transition) runsUnreserved(s *rbtype.Step) bool {
	for _, o := range t.Steps {
		if o != s && (o.Status == rbtype.StepRunning || t.reclaimed[o.ID]) && t.declaredCost(o) <= 0 && !t.isHookStep(o) {
			return true
		}
	}
	return false
}

// passes is a reach when spent plus cost is over limit's cost cap.
func passes(limit rbtype.Budget, spent, cost float64, scope rbtype.BudgetScope, rule string) *budgetReach {
	if limit.CostUSD == nil || rbtype.Money(spent+cost) <= *limit.CostUSD {
		return nil
	}
	return costReach(scope, *limit.CostUSD, spent, rule)
}
