package machine

import (
	"github.com/runbookdev/runbook/rbtype"
)

// Attempts that reserve nothing, counted across a tenant's runbooks
// (docs/design/semantics.md, "Budgets hold under concurrency"). Under a
// tenant's day or month cost cap, the attempts of verbs that declare no
// cost run one at a time among all the tenant's runbooks. A round sees the
// running steps of the runbooks it advances; of the others it sees the
// count each keeps durably (tenant_unreserved_attempts), which the load
// reads under the tenant's budget lock, so that two workers cannot both
// start one. A runbook counts an attempt as it starts and stops as its
// lease ends, at the points a declared cost's reservation is taken and
// given back (budget_reserve.go), so a reclaimed call keeps its place. A
// runbook whose step waits for another runbook's is marked waiting, and
// the end of any of the tenant's attempts wakes it, rather than its next
// BudgetRecheck.
//
// The count is kept only while the tenant's day or month is capped: an
// attempt started before a cap was set is not counted, and one that ends
// after the cap was lifted is not taken off. The first lets one more
// attempt start beside it; the second leaves its runbook counted until it
// finishes (a finished runbook's count is not read). Both need a cap
// changed while the attempt runs.

// countsUnreserved reports whether s's attempt, whose verb declares no
// cost, is counted among its tenant's attempts that reserved nothing: the
// tenant's day or month has a cost cap, and s is neither a failure hook's
// step (which runs whatever the budgets) nor a dry run's.
func (t *transition) countsUnreserved(s *rbtype.Step) bool {
	if t.book == nil || t.plan == nil || t.Rb.Mode == rbtype.ModeDryRun || t.isHookStep(s) || t.declaredCost(s) > 0 {
		return false
	}
	for _, scope := range []rbtype.BudgetScope{rbtype.BudgetDay, rbtype.BudgetMonth} {
		if limit, _ := t.book.Limit(t.Rb.Tenant, scope); limit.CostUSD != nil {
			return true
		}
	}
	return false
}

// countUnreserved records a change of the runbook's count of attempts
// that reserved nothing (+1, -1), or (waits) that the runbook holds a
// step back until one of its tenant's ends.
func (t *transition) countUnreserved(running int, waits bool) {
	t.unreserved = append(t.unreserved, rbtype.UnreservedChange{RunbookID: t.Rb.ID, Tenant: t.Rb.Tenant, Running: running, Waits: waits})
}

// tenantRunsUnreserved reports whether an attempt that reserved nothing
// runs in another of t's tenant's runbooks: one this round advances, or
// one the load counted.
func (b *BudgetBook) tenantRunsUnreserved(t *transition) bool {
	for _, o := range b.states {
		if o != t && o.Rb.Tenant == t.Rb.Tenant && o.runsUnreserved(nil) {
			return true
		}
	}
	return b.Loaded[t.Rb.Tenant].Unreserved > 0
}
