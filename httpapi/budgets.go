package httpapi

import (
	"net/http"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// Budgets (docs/design/semantics.md section 11): a tenant's budgets as
// they apply, with what was spent and what is left, for anyone who may
// read; setting one replaces the policy's for that tenant and scope, for
// an admin only (a budget holds a tenant's spending, so the tenant's own
// tokens may not raise it), stored and audited.

// budgets is GET /v1/budgets[?tenant=]: the caller's tenant's budgets, or
// for an admin the tenant asked for.
func (s *Server) budgets(w http.ResponseWriter, r *http.Request) error {
	out, err := s.engine.Budgets(r.Context(), r.URL.Query().Get("tenant"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// budgetTarget reads the {tenant} and {scope} of a budget's path.
func budgetTarget(r *http.Request) (string, rbtype.BudgetScope, error) {
	tenant, scope := r.PathValue("tenant"), rbtype.BudgetScope(r.PathValue("scope"))
	if !tenantName.MatchString(tenant) {
		return "", "", errorf(http.StatusBadRequest, CodeInvalidRequest, "%q is not a tenant (lower-case letters, digits, - and _, at most 64)", tenant)
	}
	switch scope {
	case rbtype.BudgetRunbook, rbtype.BudgetDay, rbtype.BudgetMonth:
		return tenant, scope, nil
	}
	return "", "", errorf(http.StatusBadRequest, CodeInvalidRequest, "%q is not a budget: runbook, day or month", scope)
}

// setBudget is PUT /v1/budgets/{tenant}/{scope}: the budget in the body
// ({"cost_usd": 3000}, with tokens and credits as wanted) replaces the
// policy's for that tenant and scope, from the next attempt on.
func (s *Server) setBudget(w http.ResponseWriter, r *http.Request) error {
	tenant, scope, err := budgetTarget(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return err
	}
	var b rbtype.Budget
	if err := decodeJSON(body, &b, false); err != nil {
		return err
	}
	out, err := s.engine.SetBudget(r.Context(), tenant, scope, &b, principalOf(r).Actor)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// clearBudget is DELETE /v1/budgets/{tenant}/{scope}: the budget set is
// taken away, and the policy's applies again.
func (s *Server) clearBudget(w http.ResponseWriter, r *http.Request) error {
	tenant, scope, err := budgetTarget(r)
	if err != nil {
		return err
	}
	out, err := s.engine.SetBudget(r.Context(), tenant, scope, nil, principalOf(r).Actor)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// BudgetsResponse is GET /v1/budgets.
type BudgetsResponse = apitype.TenantBudgetsView

// BudgetChangedResponse is PUT and DELETE /v1/budgets/{tenant}/{scope}.
type BudgetChangedResponse = apitype.BudgetChanged
