package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Budgets returns a tenant's budgets: the caller's own tenant's, or, for
// an admin, the one asked for.
func (e *Engine) Budgets(ctx context.Context, tenant string) (*apitype.TenantBudgetsView, error) {
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
	out := &apitype.TenantBudgetsView{Tenant: tenant, Budgets: []apitype.TenantBudgetView{}}
	for _, scope := range rbtype.BudgetScopes {
		limit, rule := book.Limit(tenant, scope)
		v := apitype.TenantBudgetView{Budget: scope, Limit: limit, Rule: rule}
		if i := slices.IndexFunc(set, func(s driver.SetBudget) bool { return s.Scope == scope }); i >= 0 {
			s := apiSetBudget(set[i])
			v.Set, v.Rule = &s, "set"
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

// SetBudget sets one of a tenant's budgets (rbd budget set), replacing
// the policy's for that scope; nil takes the set one away. It is stored
// and audited (the actor, what it replaced), and applies from the next
// attempt on: a step a budget stopped runs again once retried. Only an
// admin may: the caller checks.
func (e *Engine) SetBudget(ctx context.Context, tenant string, scope rbtype.BudgetScope, b *rbtype.Budget, by string) (*apitype.BudgetChanged, error) {
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
	return &apitype.BudgetChanged{Tenant: tenant, Budget: scope, Before: before, After: b, By: by}, nil
}

// budgetText is a budget as its JSON, "policy" for none set.
func budgetText(b *rbtype.Budget) string {
	if b == nil {
		return "policy"
	}
	raw, _ := json.Marshal(b) // numbers only
	return string(raw)
}
