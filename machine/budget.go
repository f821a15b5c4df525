package machine

import (
	"encoding/json"
	"fmt"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// Budgets (docs/design/semantics.md section 11). Before an attempt
// starts, what its runbook and its tenant have spent is compared with the
// budgets that apply: the runbook's (the tenant's runbook budget, lowered
// by the submission's own), the tenant's day's and month's (UTC). A
// tenant's budget is the one an admin set (rbd budget set), else the
// policy's; both are read as the attempt starts, so that a raise lets a
// retried step run. Spend comes from the runbook's row and the tenant's
// daily roll-up, which the advance loads, plus what the round itself
// recorded. At or over a budget, the step fails BUDGET_EXCEEDED, never
// retried; an attempt already running finishes.

// BudgetBook is what a round knows of budgets: the policy in force, the
// budgets set and spend its load read by tenant, and the round's
// transitions, whose recorded usage is not in the load yet.
type BudgetBook struct {
	Pol    *policy.Policy
	Loaded map[string]rbtype.TenantBudget
	states []*transition
}

// budgetReach is a budget found spent.
type budgetReach struct {
	Scope   rbtype.BudgetScope
	Measure string
	Limit   string
	Spent   string
	// Rule says where the budget comes from: a policy's rule, the budget
	// an admin set, or the runbook's own.
	Rule string
}

// BudgetExceededData is the data of BUDGET_EXCEEDED: which budget, the
// measure spent, its cap and the spend, and where the budget comes from.
type BudgetExceededData struct {
	Budget  rbtype.BudgetScope `json:"budget"`
	Measure string             `json:"measure"`
	Limit   json.Number        `json:"limit"`
	Spent   json.Number        `json:"spent"`
	Rule    string             `json:"rule"`
}

// Limit is a tenant's budget for a scope and where it comes from.
func (b *BudgetBook) Limit(tenant string, scope rbtype.BudgetScope) (rbtype.Budget, string) {
	if set, ok := b.Loaded[tenant].Set[scope]; ok {
		return set, "set by rbd budget set for tenant " + tenant
	}
	return b.Pol.Tenant(tenant).Budget(scope)
}

// runbookLimit is t's runbook budget and where it comes from: the
// tenant's (set or the policy's), lowered by the submission's own.
func (b *BudgetBook) runbookLimit(t *transition) (rbtype.Budget, string) {
	runbook, rule := b.Limit(t.Rb.Tenant, rbtype.BudgetRunbook)
	if own := t.Rb.Budget; own != nil {
		if tighter := runbook.Min(*own); tighter != runbook {
			runbook, rule = tighter, "the runbook's own budget, or "+rule
		}
	}
	return runbook, rule
}

// spentHere is what this transaction recorded that the runbook's attempts
// used, and what it changed of their reservations, which its loaded row
// does not hold yet.
func (t *transition) spentHere() rbtype.Spend {
	var s rbtype.Spend
	for _, a := range t.attempts {
		s = s.Add(SpendOf(a.Usage))
	}
	s.CostUSD = rbtype.Money(s.CostUSD + t.reservedHere()) // budget_reserve.go
	return s
}

// runbookSpent is what t's runbook has spent and reserved, this round's
// included.
func (t *transition) runbookSpent() rbtype.Spend { return t.Rb.Spent.Add(t.spentHere()) }

// tenantSpent is what tenant has spent and reserved in the day or month
// scope: the load's spend, and what the round's transitions of the tenant
// recorded, which happened now (today, this month).
func (b *BudgetBook) tenantSpent(tenant string, scope rbtype.BudgetScope) rbtype.Spend {
	spent := b.Loaded[tenant].Day
	if scope == rbtype.BudgetMonth {
		spent = b.Loaded[tenant].Month
	}
	for _, o := range b.states {
		if o.Rb.Tenant == tenant {
			spent = spent.Add(o.spentHere())
		}
	}
	return spent
}

// SpendOf is what a usage report spends against budgets.
func SpendOf(u rbtype.Usage) rbtype.Spend {
	return rbtype.Spend{CostUSD: u.CostUSD, Tokens: u.TokensIn + u.TokensOut, Credits: u.Credits}
}

// reached is the first budget of t's runbook found spent, or nil: the
// runbook's, the day's, the month's.
//
// reserving says the step declares a cost: its cost is held to the cost
// caps by wouldPass, which waits rather than fails, so only the other
// measures are looked at here.
func (b *BudgetBook) reached(t *transition, reserving bool) *budgetReach {
	tenant := t.Rb.Tenant
	runbook, rule := b.runbookLimit(t)
	if reserving {
		runbook.CostUSD = nil
	}
	if m, limit, spent, ok := runbook.Reached(t.runbookSpent()); ok {
		return &budgetReach{Scope: rbtype.BudgetRunbook, Measure: m, Limit: limit, Spent: spent, Rule: rule}
	}
	for _, scope := range []rbtype.BudgetScope{rbtype.BudgetDay, rbtype.BudgetMonth} {
		limit, rule := b.Limit(tenant, scope)
		if reserving {
			limit.CostUSD = nil
		}
		if limit.Empty() {
			continue
		}
		if m, l, s, ok := limit.Reached(b.tenantSpent(tenant, scope)); ok {
			return &budgetReach{Scope: scope, Measure: m, Limit: l, Spent: s, Rule: rule}
		}
	}
	return nil
}

// overBudget reports whether a step may not start for a spent budget,
// and if so fails it BUDGET_EXCEEDED (final: the runbook follows the
// step's failure mode) and says which budget in BUDGET_EXCEEDED.
func (t *transition) overBudget(s *rbtype.Step) bool {
	if t.book == nil {
		return false
	}
	reach := t.book.reached(t, t.declaredCost(s) > 0)
	if reach == nil {
		return false
	}
	t.m.Observe.BudgetExceeded(reach.Scope)
	t.event(rbtype.EventBudgetExceeded, s, BudgetExceededData{
		Budget: reach.Scope, Measure: reach.Measure, Limit: json.Number(reach.Limit), Spent: json.Number(reach.Spent), Rule: reach.Rule})
	t.failStep(s, handler.Errorf(rbtype.CodeBudgetExceeded, "the %s budget is spent (%s %s of %s; %s): the step did not start; %s",
		reach.Scope, reach.Measure, reach.Spent, reach.Limit, reach.Rule, t.budgetAdvice(s, reach.Scope)))
	return true
}

// String says a reach in a line.
func (r *budgetReach) String() string {
	return fmt.Sprintf("%s budget: %s %s of %s", r.Scope, r.Measure, r.Spent, r.Limit)
}
