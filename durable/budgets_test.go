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

// Attempts that reserved nothing are counted by runbook and read by
// tenant (migration 028): a load counts those of the tenant's unfinished
// runbooks other than its own, only for a capped tenant; a count never
// goes below zero, and a row that counts nothing and waits for nothing is
// dropped; an advance whose count goes down wakes the tenant's runbooks
// that wait for one to end, and only those.
func TestUnreservedAttemptsAreCountedAcrossATenantsRunbooks(t *testing.T) {
	b := setup(t)
	var rbs []driver.NewRunbook
	for range 5 {
		rb := newRunbook(1)
		rb.Tenant = "capped"
		b.create(t, rb)
		rbs = append(rbs, rb)
	}
	runner, waiter, other, finished, loner := rbs[0], rbs[1], rbs[2], rbs[3], rbs[4]
	ten := 10.0
	_, err := b.store.ChangeBudget(b.ctx, driver.BudgetChange{Tenant: "capped", Scope: rbtype.BudgetDay, Budget: &rbtype.Budget{CostUSD: &ten}, Actor: "test"})
	require.NoError(t, err)
	write := func(changes ...driver.UnreservedChange) {
		t.Helper()
		require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
			_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Unreserved: changes})
			return err
		}))
	}
	counted := func(ids ...uuid.UUID) int {
		t.Helper()
		var n int
		require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
			st, err := tx.LoadForAdvance(b.ctx, ids, driver.LoadOptions{Day: time.Now()})
			n = st.Budgets["capped"].Unreserved
			return err
		}))
		return n
	}
	query := func(sql string, args ...any) [][]any {
		t.Helper()
		var out [][]any
		require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) (err error) {
			out, err = tx.RowsForTest(b.ctx, sql, args...)
			return err
		}))
		return out
	}
	rows := func() map[uuid.UUID][2]any {
		t.Helper()
		out := map[uuid.UUID][2]any{}
		for _, r := range query(`SELECT runbook_id, running, waiting FROM tenant_unreserved_attempts`) {
			out[r[0].(uuid.UUID)] = [2]any{int(r[1].(int32)), r[2].(bool)}
		}
		return out
	}
	wakeAt := func(id uuid.UUID) time.Time {
		t.Helper()
		return query(`SELECT wake_at FROM runbook_wakeups WHERE runbook_id = $1`, id)[0][0].(time.Time)
	}

	later := time.Now().Add(time.Hour)
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return execAll(b.ctx, tx, `UPDATE runbook_wakeups SET wake_at = now() + interval '1 hour'`)
	}))
	write(driver.UnreservedChange{RunbookID: runner.ID, Tenant: "capped", Running: 1},
		driver.UnreservedChange{RunbookID: runner.ID, Tenant: "capped", Running: 1},
		driver.UnreservedChange{RunbookID: waiter.ID, Tenant: "capped", Waits: true},
		driver.UnreservedChange{RunbookID: finished.ID, Tenant: "capped", Running: 1})
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return execAll(b.ctx, tx, `UPDATE runbooks SET status = 'complete', finished_at = now() WHERE id = '`+finished.ID.String()+`'`)
	}))
	require.Equal(t, 2, counted(other.ID), "the runner's two; the finished runbook's count is not read")
	require.Equal(t, 0, counted(runner.ID), "a load counts other runbooks than its own")
	require.Equal(t, 2, counted(waiter.ID, other.ID))

	write(driver.UnreservedChange{RunbookID: runner.ID, Tenant: "capped", Running: -1})
	require.WithinDuration(t, time.Now(), wakeAt(waiter.ID), time.Minute, "one of the tenant's ended: the waiter is woken")
	require.True(t, wakeAt(other.ID).After(later.Add(-time.Minute)), "a runbook that does not wait is not woken")
	require.Equal(t, map[uuid.UUID][2]any{runner.ID: {1, false}, finished.ID: {1, false}}, rows(),
		"the waiter, woken, waits no more and counts nothing: its row goes")

	write(driver.UnreservedChange{RunbookID: runner.ID, Tenant: "capped", Running: -1},
		driver.UnreservedChange{RunbookID: runner.ID, Tenant: "capped", Running: -1},
		driver.UnreservedChange{RunbookID: loner.ID, Tenant: "capped", Running: -1})
	require.Equal(t, map[uuid.UUID][2]any{finished.ID: {1, false}}, rows(), "never below zero, and no row for a count of none")
	require.Equal(t, 0, counted(other.ID))
}
