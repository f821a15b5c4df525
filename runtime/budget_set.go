package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

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
	Set *driver.SetBudget `json:"set,omitempty"`
}

// Budgets returns a tenant's budgets: the caller's own tenant's, or, for
// an admin, the one asked for.
func (e *Engine) Budgets(ctx context.Context, tenant string) (*TenantBudgetsView, error) {
	if t := listTenant(ctx, tenant); t != "" {
		tenant = t
	}
	if tenant == "" {
		tenant = DefaultTenant
	}
	tbs, err := e.store.TenantBudgets(ctx, []string{tenant}, e.cfg.Clock())
	if err != nil {
		return nil, err
	}
	set, err := e.store.SetBudgets(ctx, tenant)
	if err != nil {
		return nil, err
	}
	book := &machine.BudgetBook{Pol: e.Policy(), Loaded: tbs}
	out := &TenantBudgetsView{Tenant: tenant, Budgets: []TenantBudgetView{}}
	for _, scope := range rbtype.BudgetScopes {
		limit, rule := book.Limit(tenant, scope)
		v := TenantBudgetView{Budget: scope, Limit: limit, Rule: rule}
		if i := slices.IndexFunc(set, func(s driver.SetBudget) bool { return s.Scope == scope }); i >= 0 {
			v.Set, v.Rule = &set[i], "set"
		}
		if limit.Empty() && v.Set == nil {
			continue
		}
		if scope != rbtype.BudgetRunbook {
			spent := tbs[tenant].Day
			if scope == rbtype.BudgetMonth {
				spent = tbs[tenant].Month
			}
			left := limit.Left(spent)
			v.Spent, v.Left = &spent, &left
		}
		out.Budgets = append(out.Budgets, v)
	}
	return out, nil
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

// SetBudget sets one of a tenant's budgets (rbd budget set), replacing
// the policy's for that scope; nil takes the set one away. It is stored
// and audited (the actor, what it replaced), and applies from the next
// attempt on: a step a budget stopped runs again once retried. Only an
// admin may: the caller checks.
func (e *Engine) SetBudget(ctx context.Context, tenant string, scope rbtype.BudgetScope, b *rbtype.Budget, by string) (*BudgetChanged, error) {
	if !slices.Contains(rbtype.BudgetScopes, scope) {
		return nil, fmt.Errorf("%w: budget %q must be runbook, day or month", rbtype.ErrInvalid, scope)
	}
	if b != nil {
		if m := b.Invalid(); m != "" {
			return nil, fmt.Errorf("%w: %s must be a number at or above zero", rbtype.ErrInvalid, m)
		}
		if b.Empty() {
			return nil, fmt.Errorf("%w: the budget names no measure (cost_usd, tokens, credits); to go back to the policy's, take it away", rbtype.ErrInvalid)
		}
	}
	by, _ = actorOf(ctx, by)
	before, err := e.store.ChangeBudget(ctx, driver.BudgetChange{Tenant: tenant, Scope: scope, Budget: b, Actor: by})
	if err != nil {
		return nil, err
	}
	e.log.Info("budget changed", "tenant", tenant, "budget", scope, "by", by, "before", budgetText(before), "after", budgetText(b))
	return &BudgetChanged{Tenant: tenant, Budget: scope, Before: before, After: b, By: by}, nil
}

// budgetText is a budget as its JSON, "policy" for none set.
func budgetText(b *rbtype.Budget) string {
	if b == nil {
		return "policy"
	}
	raw, _ := json.Marshal(b) // numbers only
	return string(raw)
}
