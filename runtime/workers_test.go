package runtime_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
)

// keyServer is an external system behind http.call that records the
// Idempotency-Key of every request. Its first request hangs until the
// client goes away.
type keyServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string
	arrived chan struct{}
}

func newKeyServer(t *testing.T) *keyServer {
	s := &keyServer{arrived: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		first := len(s.keys) == 1
		s.mu.Unlock()
		if first {
			// Reading the body lets the server notice when the caller goes.
			_, _ = io.Copy(io.Discard, r.Body)
			close(s.arrived)
			<-r.Context().Done() // hang until the caller dies
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"charged": true}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *keyServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// TestHelperWorker is not a test: it is the worker process that
// TestKilledWorkerLosesNothing starts and kills.
func TestHelperWorker(t *testing.T) {
	schema := os.Getenv("RUNTIME_HELPER_SCHEMA")
	if schema == "" {
		t.Skip("only runs as the helper of TestKilledWorkerLosesNothing")
	}
	store := pgtest.Open(t, schema)
	engine := runtime.New(store, runtime.NewHandlers(builtin.Deps{}), runtime.Config{
		WorkerID: "doomed", LeaseTTL: time.Second, PollInterval: 20 * time.Millisecond,
	})
	_ = engine.Run(context.Background()) // until killed
}

// TestKilledWorkerLosesNothing kills (SIGKILL) a worker process in the
// middle of an http.call. Its lease expires, another worker runs the step
// again, and the external system sees one idempotency key throughout.
func TestKilledWorkerLosesNothing(t *testing.T) {
	b := setup(t, func(c *runtime.Config) { c.LeaseTTL = time.Second })
	server := newKeyServer(t)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: charge
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%s/charge"}
    timeouts: {run_timeout: PT60S}`, server.URL)+pureVerbs)
	id := b.submit(t, `(t.charge :amount 10 :as @charge) (t.pure :v @charge.charged :as @p) (t.count :after @p)`, nil)

	helper := exec.Command(os.Args[0], "-test.run=^TestHelperWorker$", "-test.v")
	helper.Env = append(os.Environ(), "RUNTIME_HELPER_SCHEMA="+b.store.Schema(), "TEST_DATABASE_URL="+pgtest.ServerURL(t))
	out := &strings.Builder{}
	helper.Stdout, helper.Stderr = out, out
	require.NoError(t, helper.Start())
	select {
	case <-server.arrived:
	case <-time.After(30 * time.Second):
		_ = helper.Process.Kill()
		t.Fatalf("the doomed worker never called the server:\n%s", out)
	}
	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	_ = helper.Wait()

	v, err := b.engine.Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.StepRunning, step(v, "charge").Status, "the dead worker left the step running")

	// Another worker takes over once the lease has expired.
	b.run(t)
	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	keys := server.seen()
	require.Len(t, keys, 2, "the step ran again after the kill")
	require.NotEmpty(t, keys[0])
	require.Equal(t, keys[0], keys[1], "and the external system saw one idempotency key")
	require.JSONEq(t, `{"charged": true}`, string(v.Outcomes["charge"]))
	require.Equal(t, 2, step(v, "charge").Attempt)
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	var workers []string
	for _, e := range events {
		if e.Type == rbtype.EventStepStarted && e.StepKey == "charge" {
			workers = append(workers, e.WorkerID)
		}
	}
	require.Equal(t, []string{"doomed", b.engine.WorkerID()}, workers)
	// The pure step after it ran once, inside the surviving worker's advance.
	require.JSONEq(t, `{"v": true}`, string(v.Outcomes["p"]))
	require.Equal(t, 1, step(v, "p").Attempt)
}

// TestThreeWorkersRunEveryStepOnce runs three workers against one database
// on 300 runbooks of four steps each, one of them pure and so called
// inside an advance (inline.go), counting every handler call and every
// STEP_STARTED.
func TestThreeWorkersRunEveryStepOnce(t *testing.T) {
	// Small claims, so that the work spreads over the workers.
	reg := prometheus.NewRegistry()
	metrics := runtime.NewMetrics(reg)
	b := setup(t, func(c *runtime.Config) { c.ClaimBatch, c.BatchSize, c.Metrics = 8, 8, metrics })
	b.extendCatalogue(t, pureVerbs)
	engines := []*runtime.Engine{b.engine}
	for i := range 2 {
		engines = append(engines, runtime.New(b.store, b.handlers, runtime.Config{
			WorkerID: fmt.Sprintf("worker-%d", i+2), Catalogue: b.cat, ClaimBatch: 8, BatchSize: 8, Metrics: metrics,
			PollInterval: 20 * time.Millisecond, SweepInterval: 200 * time.Millisecond, LeaseTTL: 5 * time.Second,
		}))
	}
	const runbooks = 300
	ids := make([]uuid.UUID, runbooks)
	for i := range ids {
		ids[i] = b.submit(t, fmt.Sprintf(`
(t.count :n %d :as @one)
(t.pure :v @one :as @pure)
(t.count :after @pure :as @two)
(t.count :after @one :as @three)`, i), nil)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() { require.NoError(t, e.Run(ctx)) })
	}
	defer func() { cancel(); wg.Wait() }()

	for _, id := range ids {
		b.waitStatus(t, id, rbtype.RunbookComplete)
	}
	workers := map[string]int{}
	for _, id := range ids {
		for _, s := range []string{"one", "two", "three"} {
			require.Equal(t, 1, b.rec.callsOf(id, s), "runbook %s step %s", id, s)
		}
		events, err := b.engine.Events(b.ctx, id, 0, 0)
		require.NoError(t, err)
		started := map[string]int{}
		for _, e := range events {
			if e.Type == rbtype.EventStepStarted {
				workers[e.WorkerID]++
				started[e.StepKey]++
			}
		}
		require.Equal(t, map[string]int{"one": 1, "pure": 1, "two": 1, "three": 1}, started, "runbook %s", id)
	}
	require.Len(t, workers, 3, "all three workers took work: %v", workers)
	require.Equal(t, float64(runbooks), metric(t, reg, "rbd_steps_inline_total"), "every pure step ran inline")
}

// TestNotificationsSurviveAListenerCut parks runbooks, cuts the worker's
// LISTEN connection with pg_terminate_backend while their notifications
// arrive, and checks every one is processed, with polling turned off so
// that only the listener's reconnection sweep can find what it missed.
func TestNotificationsSurviveAListenerCut(t *testing.T) {
	b := setup(t, func(c *runtime.Config) {
		c.PollInterval = time.Hour
		c.SweepInterval = time.Hour
	})
	const n = 20
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = b.submit(t, fmt.Sprintf(`(t.wait :as @w) (t.echo :answer @w.answer :n %d)`, i), nil)
	}
	b.run(t)
	keys := make([]string, n)
	for i, id := range ids {
		keys[i] = step(b.waitState(t, id, "parked"), "w").CorrelationKey
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		pgtest.TerminateListeners(t, b.store)
	})
	for i, key := range keys {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Millisecond)
			_, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: "completed", Result: []byte(`{"answer":"ok"}`)})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	for _, id := range ids {
		b.waitStatus(t, id, rbtype.RunbookComplete)
	}
}

// TestShutdownReleasesLeases stops a worker while a call runs past the
// grace period and checks that it returns, leaves no active lease, and
// that another worker finishes the step at once.
func TestShutdownReleasesLeases(t *testing.T) {
	b := setup(t, func(c *runtime.Config) { c.ShutdownGrace = 100 * time.Millisecond; c.LeaseTTL = time.Hour })
	release := make(chan struct{})
	var calls sync.WaitGroup
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.slow", Kind: rbtype.KindSync}, runtime.HandlerFunc(
		func(ctx context.Context, c *runtime.Call) (runtime.Result, error) {
			calls.Add(1)
			defer calls.Done()
			select {
			case <-release:
				return runtime.Complete(map[string]any{"done": true}), nil
			case <-ctx.Done():
				return runtime.Result{}, ctx.Err()
			}
		})))
	b.extendCatalogue(t, `
- name: slow
  domain: t
  execution: {kind: sync, handler: test.slow, side_effects: none}`)
	id := b.submit(t, `(t.slow :as @s)`, nil)

	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- b.engine.Run(ctx) }()
	b.waitFor(t, id, "running", func(v *apitype.RunbookView) bool { return step(v, "s").Status == rbtype.StepRunning })
	cancel()
	require.NoError(t, <-done)
	leases, err := b.store.WorkerLeases(b.ctx, b.engine.WorkerID())
	require.NoError(t, err)
	require.Empty(t, leases, "no lease is left behind")

	close(release)
	next := runtime.New(b.store, b.handlers, runtime.Config{Catalogue: b.cat, PollInterval: 20 * time.Millisecond, LeaseTTL: time.Hour})
	ctx2, cancel2 := context.WithCancel(b.ctx)
	defer cancel2()
	go func() { _ = next.Run(ctx2) }()
	b.waitStatus(t, id, rbtype.RunbookComplete)
	cancel2()
}
