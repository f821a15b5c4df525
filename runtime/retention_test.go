package runtime_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// TestOrphanNotificationsExpire: a notification for a key no step has
// parked with is kept for the step that may yet park with it, but not
// forever (docs/reliability.md): the sweep deletes it after the orphan TTL (30 days
// by default), and rbd_orphan_notifications counts those waiting.
func TestOrphanNotificationsExpire(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *runtime.Config) { c.Metrics = runtime.NewMetrics(reg) })
	notify := func(key, answer string) rbtype.InboxResult {
		res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted,
			Result: []byte(`{"answer": "` + answer + `"}`)})
		require.NoError(t, err)
		return res
	}
	require.Equal(t, rbtype.InboxAccepted, notify("orphan-old", "a"))
	require.Equal(t, rbtype.InboxAccepted, notify("orphan-new", "a"))
	pgtest.Exec(t, fmt.Sprintf(`UPDATE %s.completion_notifications SET received_at = now() - interval '31 days'
		WHERE correlation_key = 'orphan-old'`, b.store.Schema()))
	b.run(t)

	deadline := time.Now().Add(30 * time.Second)
	for notify("orphan-old", "b") == rbtype.InboxConflict {
		require.True(t, time.Now().Before(deadline), "the old orphan is still there")
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, rbtype.InboxConflict, notify("orphan-new", "b"), "a recent orphan stays")
	for orphans(t, reg) != 2 { // orphan-new, and orphan-old again
		require.True(t, time.Now().Before(deadline), "rbd_orphan_notifications is %v", orphans(t, reg))
		time.Sleep(50 * time.Millisecond)
	}
}

// orphans reads the rbd_orphan_notifications gauge; -1 when it is absent.
func orphans(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return metric(t, reg, "rbd_orphan_notifications")
}

// TestTheSweepPrunesWhatPassedItsRetention: with Retention set (rbd serve
// --retention), the sweep deletes a runbook that finished longer ago,
// counts it in rbd_pruned_total, and leaves one that finished since and
// one still parked.
func TestTheSweepPrunesWhatPassedItsRetention(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *runtime.Config) {
		c.Metrics = runtime.NewMetrics(reg)
		c.Retention, c.ReceiptWindow, c.LedgerRetention = 24*time.Hour, 48*time.Hour, 96*time.Hour
	})
	old := b.submit(t, `(t.echo :v "old")`, nil)
	recent := b.submit(t, `(t.echo :v "recent")`, nil)
	parked := b.submit(t, `(t.wait :as @w)`, nil)
	b.run(t)
	b.waitStatus(t, old, rbtype.RunbookComplete)
	b.waitStatus(t, recent, rbtype.RunbookComplete)
	b.waitState(t, parked, "parked")
	pgtest.Exec(t, fmt.Sprintf(`UPDATE %s.runbooks SET finished_at = now() - interval '25 hours' WHERE id = '%s'`,
		b.store.Schema(), old))

	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := b.engine.Get(b.ctx, old)
		if errors.Is(err, rbtype.ErrNotFound) {
			break
		}
		require.NoError(t, err)
		require.True(t, time.Now().Before(deadline), "the old runbook is still there")
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range []uuid.UUID{recent, parked} {
		_, err := b.engine.Get(b.ctx, id)
		require.NoError(t, err, "a runbook that finished since, and one still running, stay")
	}
	require.Equal(t, float64(1), prunedCounter(t, reg, "runbooks"))
}

// prunedCounter reads rbd_pruned_total for one kind.
func prunedCounter(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "rbd_pruned_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
