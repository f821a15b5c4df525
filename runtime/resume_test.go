package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
)

// The resume of docs/runtime.md: a notification that arrives at a daemon whose
// worker runs resumes its runbook in the notification's own transaction,
// and the steps it readies start on this worker, with no wake-up, no claim
// and no second transaction. Without a worker (rbd --worker=false) the
// inbox row and its wake-up are all it writes, and a worker elsewhere
// resumes. Both paths are tested here.

const resumeSource = `(t.wait :as @w) (t.count :answer @w.answer :as @next)`

// TestANotificationResumesItsRunbookInItsOwnTransaction runs a worker that
// polls and sweeps once an hour: after the first claim, which parks the
// step, nothing but the notification itself can move the runbook on.
func TestANotificationResumesItsRunbookInItsOwnTransaction(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *runtime.Config) {
		c.Metrics = runtime.NewMetrics(reg)
		c.PollInterval, c.SweepInterval = time.Hour, time.Hour
	})
	b.run(t)
	id := b.submit(t, resumeSource, nil)
	v := b.waitState(t, id, "parked")
	key := step(v, "w").CorrelationKey

	res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted,
		Result: json.RawMessage(`{"answer": "yes"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
	require.Equal(t, 1.0, metric(t, reg, "rbd_resumes_in_place_total"))

	// By the time Notify returned, the resume had committed: the wait is
	// over and the next step is leased to this worker.
	v, err = b.engine.Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.StepComplete, step(v, "w").Status)
	require.Contains(t, []rbtype.StepStatus{rbtype.StepRunning, rbtype.StepComplete}, step(v, "next").Status)

	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, 1, b.rec.callsOf(id, "next"))
	require.JSONEq(t, `{"answer": "yes"}`, string(v.Outcomes["w"]))
	var started []string
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Type == rbtype.EventStepStarted && e.StepKey == "next" {
			started = append(started, e.WorkerID)
		}
	}
	require.Equal(t, []string{b.engine.WorkerID()}, started, "the notified worker started the next step, once")

	// A repeat is a duplicate and resumes nothing.
	res, err = b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted,
		Result: json.RawMessage(`{"answer": "yes"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxDuplicate, res)
	require.Equal(t, 1.0, metric(t, reg, "rbd_resumes_in_place_total"))
	require.Equal(t, 1, b.rec.callsOf(id, "next"))
}

// TestANotificationWithoutAWorkerWakesOne: the notification reaches an
// engine that does not run (an API-only rbd); it stores the notification
// and wakes the runbook, and the worker, another engine on the same
// database, resumes it.
func TestANotificationWithoutAWorkerWakesOne(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *runtime.Config) { c.Metrics = runtime.NewMetrics(reg) })
	front := b.engine
	b.opts = nil
	b.newEngine()
	b.run(t) // the worker: b.engine from here on
	id := b.submit(t, resumeSource, nil)
	v := b.waitState(t, id, "parked")

	res, err := front.Notify(b.ctx, runtime.Notification{CorrelationKey: step(v, "w").CorrelationKey,
		Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{"answer": "no"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
	require.Equal(t, 0.0, metric(t, reg, "rbd_resumes_in_place_total"), "the front has no worker to resume in place")
	require.Equal(t, 1.0, metric(t, reg, "rbd_resumes_handed_on_total"), "it handed the resume on")

	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, 1, b.rec.callsOf(id, "next"))
	require.JSONEq(t, `{"answer": "no"}`, string(v.Outcomes["w"]))
}

// metric reads a counter or gauge with no labels from reg, or a
// histogram's count; -1 when it is absent.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		m := f.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		if h := m.GetHistogram(); h != nil {
			return float64(h.GetSampleCount())
		}
		return m.GetGauge().GetValue()
	}
	return -1
}

// TestACancelledRunbookLeavesNoLease: a step's lease is columns of its
// row, and no sweep looks for expired ones, so each way a lease can be
// left behind by a cancellation is tried. A call still out when its
// runbook is cancelled gives its lease up with its outcome, which the
// cancelled step otherwise ignores; a lease whose worker died is ended by
// the advance the cancellation schedules for when it expires.
func TestACancelledRunbookLeavesNoLease(t *testing.T) {
	b := setup(t, func(c *runtime.Config) { c.LeaseTTL = time.Second })
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.block", Kind: rbtype.KindSync}, runtime.HandlerFunc(
		func(ctx context.Context, c *runtime.Call) (runtime.Result, error) {
			started <- struct{}{}
			<-release
			return runtime.Complete(map[string]any{}), nil
		})))
	b.extendCatalogue(t, `
- name: block
  domain: t
  execution: {kind: sync, handler: test.block, side_effects: external_call}`)
	b.run(t)
	id := b.submit(t, `(t.block :as @b) (t.count :after @b)`, nil)
	<-started
	require.NoError(t, b.engine.Cancel(b.ctx, id, "carol"))
	leases, err := b.store.WorkerLeases(b.ctx, b.engine.WorkerID())
	require.NoError(t, err)
	require.Len(t, leases, 1, "the call is still out, and holds its lease")
	close(release)
	waitNoLeases(t, b, b.engine.WorkerID())

	// A worker that died with the step in hand: its lease is taken by
	// hand, as a dead worker's would stand, on a runbook cancelled after.
	id = b.submit(t, `(t.wait :as @w)`, nil)
	v := b.waitState(t, id, "parked")
	pgtest.Exec(t, fmt.Sprintf(`UPDATE %s.runbook_steps SET status = 'running', lease_worker = 'dead', lease_attempt = 1,
		lease_acquired_at = now(), lease_expires_at = now() + interval '1 second' WHERE runbook_id = '%s' AND key = 'w'`,
		b.store.Schema(), v.ID))
	require.NoError(t, b.engine.Cancel(b.ctx, id, "carol"))
	waitNoLeases(t, b, "dead")
}

// waitNoLeases waits until the worker holds no lease, failing after 20
// seconds.
func waitNoLeases(t *testing.T, b *testBundle, worker string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		leases, err := b.store.WorkerLeases(b.ctx, worker)
		require.NoError(t, err)
		if len(leases) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s still holds %d leases", worker, len(leases))
		time.Sleep(20 * time.Millisecond)
	}
}
