package durable_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/rbtype"
)

// A view's reads see one snapshot (Store.ReadView): what commits while
// they run, a step completing and its runbook with it, is not seen by the
// reads after it, so a view never shows a runbook of one moment beside
// its steps of another. Reads outside a snapshot see it at once.
func TestAViewReadsOneSnapshot(t *testing.T) {
	b := setup(t)
	rb := newRunbook(2)
	b.create(t, rb)
	page := driver.StepPage{Limit: 10}
	err := b.store.ReadView(b.ctx, func(r driver.ViewReader) error {
		before, err := r.Runbook(b.ctx, rb.ID)
		require.NoError(t, err)
		require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
			return execAll(b.ctx, tx,
				`UPDATE runbook_steps SET status = 'complete', finished_at = now() WHERE runbook_id = '`+rb.ID.String()+`'`,
				`UPDATE runbooks SET status = 'complete', finished_at = now() WHERE id = '`+rb.ID.String()+`'`,
				`INSERT INTO tenant_spend (tenant, day, cost_usd) VALUES ('`+before.Tenant+`', current_date, 7)`)
		}))
		steps, err := r.Steps(b.ctx, rb.ID, page)
		require.NoError(t, err)
		require.Len(t, steps, 2)
		for _, s := range steps {
			require.Equal(t, rbtype.StepPending, s.Status, "the steps as they were when the view began")
		}
		again, err := r.Runbook(b.ctx, rb.ID)
		require.NoError(t, err)
		require.Equal(t, before.Status, again.Status)
		tbs, err := r.TenantBudgets(b.ctx, []string{before.Tenant}, time.Now())
		require.NoError(t, err)
		require.Zero(t, tbs[before.Tenant].Day.CostUSD, "the spend as it was too")
		return nil
	})
	require.NoError(t, err)

	now, err := b.store.Runbook(b.ctx, rb.ID)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, now.Status, "outside the snapshot, what committed")
	steps, err := b.store.Steps(b.ctx, rb.ID, page)
	require.NoError(t, err)
	require.Equal(t, rbtype.StepComplete, steps[0].Status)
}
