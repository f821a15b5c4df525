package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// Budgets reads the budgets of the token's tenant, or, for an admin, of
// tenant ("" for the token's own).
func (c *Client) Budgets(ctx context.Context, tenant string) (*apitype.TenantBudgetsView, error) {
	var out apitype.TenantBudgetsView
	if _, err := c.call(ctx, http.MethodGet, withQuery("/v1/budgets", "tenant", tenant), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetBudget sets one of a tenant's budgets (runbook, day or month),
// replacing the policy's: admins only. A step a budget stopped runs again
// once retried.
func (c *Client) SetBudget(ctx context.Context, tenant string, scope rbtype.BudgetScope, b rbtype.Budget) (*apitype.BudgetChanged, error) {
	var out apitype.BudgetChanged
	if _, err := c.callJSON(ctx, http.MethodPut, budgetPath(tenant, scope), nil, b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClearBudget takes away a budget an admin set: the policy's applies
// again.
func (c *Client) ClearBudget(ctx context.Context, tenant string, scope rbtype.BudgetScope) (*apitype.BudgetChanged, error) {
	var out apitype.BudgetChanged
	if _, err := c.call(ctx, http.MethodDelete, budgetPath(tenant, scope), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func budgetPath(tenant string, scope rbtype.BudgetScope) string {
	return "/v1/budgets/" + url.PathEscape(tenant) + "/" + url.PathEscape(string(scope))
}
