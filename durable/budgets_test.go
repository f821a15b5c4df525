package durable_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/rbtype"
)

// An advance reads, in one statement, the budgets set for its runbooks'
// tenants and those tenants' spend for the day and the month: a tenant
// with no budget set has its spend read only when the policy caps some
// tenant's day or month (AllSpend), and a day of another month, or after
// the day, is not in the month's sum.
func TestAdvanceLoadsBudgetsSetAndSpendOfTheirTenants(t *testing.T) {
	b := setup(t)
	capped, uncapped := newRunbook(1), newRunbook(1)
	capped.Tenant, uncapped.Tenant = "capped", "uncapped"
	b.create(t, capped)
	b.create(t, uncapped)
	ten := 10.0
	_, err := b.store.ChangeBudget(b.ctx, driver.BudgetChange{Tenant: "capped", Scope: rbtype.BudgetDay, Budget: &rbtype.Budget{CostUSD: &ten}, Actor: "test"})
	require.NoError(t, err)
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return execAll(b.ctx, tx, `INSERT INTO tenant_spend (tenant, day, cost_usd, tokens, credits) VALUES
			('capped', '2026-11-27', 3, 30, 0.5), ('capped', '2026-11-02', 4, 40, 0),
			('capped', '2026-10-31', 100, 1000, 100), ('capped', '2026-11-28', 100, 1000, 100),
			('uncapped', '2026-11-27', 5, 50, 1), ('elsewhere', '2026-11-27', 7, 70, 7)`)
	}))
	day := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	load := func(allSpend bool) map[string]driver.TenantBudget {
		var got map[string]driver.TenantBudget
		require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
			st, err := tx.LoadForAdvance(b.ctx, []uuid.UUID{capped.ID, uncapped.ID}, driver.LoadOptions{Day: day, AllSpend: allSpend})
			got = st.Budgets
			return err
		}))
		return got
	}

	want := driver.TenantBudget{
		Set:   map[rbtype.BudgetScope]rbtype.Budget{rbtype.BudgetDay: {CostUSD: &ten}},
		Day:   rbtype.Spend{CostUSD: 3, Tokens: 30, Credits: 0.5},
		Month: rbtype.Spend{CostUSD: 7, Tokens: 70, Credits: 0.5},
	}
	got := load(false)
	require.Equal(t, map[string]driver.TenantBudget{"capped": want}, got,
		"without AllSpend, a tenant with no budget set is not read")

	got = load(true)
	require.Equal(t, want, got["capped"])
	require.Equal(t, driver.TenantBudget{
		Day: rbtype.Spend{CostUSD: 5, Tokens: 50, Credits: 1}, Month: rbtype.Spend{CostUSD: 5, Tokens: 50, Credits: 1},
	}, got["uncapped"])
	require.NotContains(t, got, "elsewhere", "only the runbooks' tenants")
}
