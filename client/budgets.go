package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// Budgets is GET /v1/budgets: a tenant's budgets, each as it applies,
// with what was spent and what is left.
type Budgets = apitype.TenantBudgetsView

// TenantBudget is one scope of a tenant's budgets: the cap that applies
// (the one an admin set, else the policy's), and for a day or a month
// what was spent and what is left.
type TenantBudget = apitype.TenantBudgetView

// SetBudget is a budget an admin set, with who and when.
type SetBudget = apitype.SetBudget

// BudgetChanged says what a change of budget replaced: Before nil, the
// policy's applied; After nil, the policy's applies again.
type BudgetChanged = apitype.BudgetChanged

// Budgets reads the budgets of the token's tenant, or, for an admin, of
// tenant ("" for the token's own).
func (c *Client) Budgets(ctx context.Context, tenant string) (*Budgets, error) {
	var out Budgets
	if _, err := c.call(ctx, http.MethodGet, withQuery("/v1/budgets", "tenant", tenant), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetBudget sets one of a tenant's budgets (runbook, day or month),
// replacing the policy's: admins only. A step a budget stopped runs again
// once retried.
func (c *Client) SetBudget(ctx context.Context, tenant string, scope rbtype.BudgetScope, b rbtype.Budget) (*BudgetChanged, error) {
	var out BudgetChanged
	if _, err := c.callJSON(ctx, http.MethodPut, budgetPath(tenant, scope), nil, b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClearBudget takes away a budget an admin set: the policy's applies
// again.
func (c *Client) ClearBudget(ctx context.Context, tenant string, scope rbtype.BudgetScope) (*BudgetChanged, error) {
	var out BudgetChanged
	if _, err := c.call(ctx, http.MethodDelete, budgetPath(tenant, scope), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func budgetPath(tenant string, scope rbtype.BudgetScope) string {
	return "/v1/budgets/" + url.PathEscape(tenant) + "/" + url.PathEscape(string(scope))
}
