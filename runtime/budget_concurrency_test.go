package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
)

// Budgets hold under concurrency (docs/design/semantics.md, "The forms
// compose"): three runbooks of one tenant, each starting three paid calls
// at once (a for-each), under a day budget with room for two. Every
// attempt reserves its declared cost as it starts, and the advances of a
// capped tenant read what the others reserved: two calls are made, the
// other seven wait, ready, blocked on BUDGET_EXCEEDED, and the day's spend
// stays within the cap.
func TestBudgetsHoldUnderConcurrentStarts(t *testing.T) {
	b := setup(t)
	var calls atomic.Int64
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.pay", Kind: rbtype.KindSync}, handler.HandlerFunc(
		func(ctx context.Context, c *handler.Call) (handler.Result, error) {
			calls.Add(1)
			time.Sleep(50 * time.Millisecond)
			return handler.Complete(map[string]any{"paid": true}).WithUsage(rbtype.Usage{CostUSD: 0.07}), nil
		})))
	b.extendCatalogue(t, `
- name: pay
  domain: t
  cost: {usd: 0.07}
  execution: {kind: sync, handler: test.pay, side_effects: external_call}
`)
	_, err := b.engine.SetBudget(b.ctx, "default", rbtype.BudgetDay, &rbtype.Budget{CostUSD: ptrTo(0.2)}, "ops")
	require.NoError(t, err)
	b.run(t)
	var ids []uuid.UUID
	for i := range 3 {
		ids = append(ids, b.submit(t, `(for-each $xs :as @x (t.pay :n @x :as @p))`, map[string]any{"xs": []any{i, i + 1, i + 2}}))
	}
	blocked := func(v *apitype.RunbookView) int {
		n := 0
		for _, bo := range v.BlockedOn {
			if bo.Reason == string(rbtype.CodeBudgetExceeded) {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool {
		held, done := 0, 0
		for _, id := range ids {
			v, err := b.engine.Get(b.ctx, id)
			require.NoError(t, err)
			held += blocked(v)
			for _, s := range v.Steps {
				if s.Status == rbtype.StepComplete && s.Key != "p" {
					done++
				}
			}
		}
		return held == 7 && done == 2
	}, 20*time.Second, 50*time.Millisecond, "two paid, seven held")
	require.Equal(t, int64(2), calls.Load(), "no call past the budget")
	budgets, err := b.engine.Budgets(b.ctx, "default")
	require.NoError(t, err)
	require.NotNil(t, budgets)
	for _, id := range ids {
		v, err := b.engine.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, rbtype.RunbookExecuting, v.Status, "waiting for budget, not failed")
	}
}

func ptrTo[T any](v T) *T { return &v }
