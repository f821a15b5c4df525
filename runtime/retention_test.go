package runtime_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// TestOrphanNotificationsExpire: a notification for a key no step has
// parked with is kept for the step that may yet park with it, but not
// forever (issue 13): the sweep deletes it after the orphan TTL (30 days
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
