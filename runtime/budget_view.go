package runtime

import (
	"fmt"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// budgetViews are the budgets of rb as its next attempt would meet them,
// from its tenant's budgets and spend as read (tbs).
func (e *Engine) budgetViews(rb *driver.Runbook, tbs map[string]driver.TenantBudget) []apitype.BudgetView {
	book := &machine.BudgetBook{Pol: e.Policy(), Loaded: tbs}
	var out []apitype.BudgetView
	add := func(scope rbtype.BudgetScope, limit rbtype.Budget, rule string, spent rbtype.Spend) {
		if limit.Empty() {
			return
		}
		_, _, _, reached := limit.Reached(spent)
		out = append(out, apitype.BudgetView{Budget: scope, Limit: limit, Spent: spent, Left: limit.Left(spent), Rule: rule, Exceeded: reached})
	}
	limit, rule := book.Limit(rb.Tenant, rbtype.BudgetRunbook)
	if rb.Budget != nil {
		if tighter := limit.Min(*rb.Budget); tighter != limit {
			limit, rule = tighter, "the runbook's own budget, or "+rule
		}
	}
	add(rbtype.BudgetRunbook, limit, rule, rb.Spent)
	day, rule := book.Limit(rb.Tenant, rbtype.BudgetDay)
	add(rbtype.BudgetDay, day, rule, tbs[rb.Tenant].Day)
	month, rule := book.Limit(rb.Tenant, rbtype.BudgetMonth)
	add(rbtype.BudgetMonth, month, rule, tbs[rb.Tenant].Month)
	return out
}

// explainBudgetRetries adds to the retry actions of steps that failed
// BUDGET_EXCEEDED which budget is spent now and how much went, and what
// to do first (docs/design/semantics.md section 11).
func explainBudgetRetries(v *apitype.RunbookView, tenant string) {
	var spent *apitype.BudgetView
	for i := range v.Cost.Budgets {
		if v.Cost.Budgets[i].Exceeded {
			spent = &v.Cost.Budgets[i]
			break
		}
	}
	failed := map[string]bool{}
	for _, f := range v.Failures {
		if f.Code == rbtype.CodeBudgetExceeded {
			failed[f.Step] = true
		}
	}
	for i := range v.NextActions {
		a := &v.NextActions[i]
		if a.Kind != apitype.ActionRetry || !failed[a.Step] {
			continue
		}
		if spent == nil {
			a.Message = "the budget that stopped this step is no longer spent; retry it"
			continue
		}
		a.Budget = spent
		a.Message = fmt.Sprintf("the %s budget is spent (%s); raise it first: rbd budget set --tenant %s --%s AMOUNT",
			spent.Budget, spentText(spent), tenant, spent.Budget)
	}
}

// spentText says what went of a budget's capped measures.
func spentText(b *apitype.BudgetView) string {
	s := ""
	add := func(measure, spent, limit string) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %s of %s", measure, spent, limit)
	}
	if b.Limit.CostUSD != nil {
		add(rbtype.MeasureCostUSD, fmt.Sprint(b.Spent.CostUSD), fmt.Sprint(*b.Limit.CostUSD))
	}
	if b.Limit.Tokens != nil {
		add(rbtype.MeasureTokens, fmt.Sprint(b.Spent.Tokens), fmt.Sprint(*b.Limit.Tokens))
	}
	if b.Limit.Credits != nil {
		add(rbtype.MeasureCredits, fmt.Sprint(b.Spent.Credits), fmt.Sprint(*b.Limit.Credits))
	}
	return s
}
