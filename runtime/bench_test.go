package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

// The runtime's benchmarks: a first look at throughput and latency against
// a local PostgreSQL. Run them with PGTEST_DURABLE=1 (make bench does) so
// that the server syncs every commit to disk, as a deployment would.

const benchVerbs = `
- name: noop
  domain: b
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: pure
  domain: b
  execution: {kind: sync, handler: core.echo, side_effects: none, determinism: pure}
- name: wait
  domain: b
  execution: {kind: durable, handler: await.notification, side_effects: none, timeouts: {park_timeout: PT1H}}
`

type benchBundle struct {
	ctx    context.Context
	store  *durable.Store
	engine *runtime.Engine
}

func benchSetup(b *testing.B, cfg runtime.Config) *benchBundle {
	b.Helper()
	ctx := context.Background()
	store := pgtest.Store(b)
	handlers := runtime.NewHandlers(builtin.Deps{})
	defs, diags := verbs.Parse("bench.yaml", []byte(benchVerbs))
	require.Empty(b, diags)
	cat, diags := registry.New(defs, handlers.Specs())
	require.Empty(b, diags)
	cfg.Catalogue = cat
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	return &benchBundle{ctx: ctx, store: store, engine: runtime.New(store, handlers, cfg)}
}

func (bb *benchBundle) run(b *testing.B) func() {
	ctx, cancel := context.WithCancel(bb.ctx)
	done := make(chan error, 1)
	go func() { done <- bb.engine.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(b, <-done)
	}
}

// waitAll waits until n runbooks are complete.
func (bb *benchBundle) waitAll(b *testing.B, n int64) {
	for {
		counts, err := bb.store.CountByStatus(bb.ctx)
		require.NoError(b, err)
		if counts[rbtype.RunbookComplete] >= n {
			return
		}
		if counts[rbtype.RunbookFailed] > 0 {
			b.Fatalf("runbooks failed: %v", counts)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func chainSource(steps, salt int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "(b.noop :salt %d :as @s1)\n", salt)
	for i := 2; i <= steps; i++ {
		fmt.Fprintf(&s, "(b.noop :salt @s%d.salt :as @s%d)\n", i-1, i)
	}
	return s.String()
}

func fanSource(width, salt int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "(b.noop :salt %d :as @root)\n", salt)
	var leaves []string
	for i := 1; i <= width; i++ {
		fmt.Fprintf(&s, "(b.noop :from @root.salt :i %d :as @leaf%d)\n", i, i)
		leaves = append(leaves, fmt.Sprintf("@leaf%d", i))
	}
	fmt.Fprintf(&s, "(b.noop :after [%s])\n", strings.Join(leaves, " "))
	return s.String()
}

// BenchmarkNoopSteps measures completed no-op sync steps per second, end
// to end: N runbooks are submitted, then one worker runs them all.
func BenchmarkNoopSteps(b *testing.B) {
	for _, shape := range []struct {
		name  string
		steps int
		src   func(int) string
	}{
		{"chain10", 10, func(i int) string { return chainSource(10, i) }},
		{"fan8", 10, func(i int) string { return fanSource(8, i) }},
	} {
		b.Run(shape.name, func(b *testing.B) {
			const runbooks = 200
			var total time.Duration
			for b.Loop() {
				bb := benchSetup(b, runtime.Config{Advancers: 4, BatchSize: 64})
				for i := range runbooks {
					_, err := bb.engine.SubmitSource(bb.ctx, "b.rbk", []byte(shape.src(i)), runtime.Submission{})
					require.NoError(b, err)
				}
				began := time.Now()
				stop := bb.run(b)
				bb.waitAll(b, runbooks)
				total += time.Since(began)
				stop()
			}
			b.ReportMetric(float64(runbooks*shape.steps*b.N)/total.Seconds(), "steps/s")
		})
	}
}

// BenchmarkResumeLatency parks runbooks, sends their notifications at a
// steady 200 per second, and measures from Notify's return (the webhook's
// 202) to the dependent step's STEP_STARTED.
func BenchmarkResumeLatency(b *testing.B) {
	const parked, rate = 400, 200
	var all []time.Duration
	for b.Loop() {
		bb := benchSetup(b, runtime.Config{})
		ids := make([]uuid.UUID, parked)
		for i := range ids {
			sub, err := bb.engine.SubmitSource(bb.ctx, "w.rbk", []byte(fmt.Sprintf("(b.wait :i %d :as @w) (b.noop :after @w :as @next)", i)), runtime.Submission{})
			require.NoError(b, err)
			ids[i] = sub.ID
		}
		stop := bb.run(b)
		keys := make([]string, parked)
		for i, id := range ids {
			for keys[i] == "" {
				v, err := bb.engine.Get(bb.ctx, id)
				require.NoError(b, err)
				for _, s := range v.Steps {
					if s.Key == "w" && s.Status == rbtype.StepParked {
						keys[i] = s.CorrelationKey
					}
				}
				if keys[i] == "" {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}
		sent := make([]time.Time, parked)
		tick := time.NewTicker(time.Second / rate)
		var wg sync.WaitGroup
		for i, key := range keys {
			<-tick.C
			wg.Go(func() {
				_, err := bb.engine.Notify(bb.ctx, runtime.Notification{CorrelationKey: key, Status: "completed"})
				sent[i] = time.Now()
				require.NoError(b, err)
			})
		}
		tick.Stop()
		wg.Wait()
		bb.waitAll(b, parked)
		stop()
		for i, id := range ids {
			events, err := bb.store.Events(bb.ctx, id, 0, 0)
			require.NoError(b, err)
			for _, e := range events {
				if e.Type == rbtype.EventStepStarted && e.StepKey == "next" {
					all = append(all, e.At.Sub(sent[i]))
				}
			}
		}
	}
	reportPercentiles(b, all, "resume")
}

// BenchmarkReadyToStarted measures, for no-op steps under light load, from
// the moment the previous step's call returned (its outcome is what makes
// the next step ready) to the next step's STEP_STARTED, and from STEP_READY
// to STEP_STARTED.
func BenchmarkReadyToStarted(b *testing.B) {
	var fromReturn, fromReady []time.Duration
	for b.Loop() {
		bb := benchSetup(b, runtime.Config{})
		stop := bb.run(b)
		var ids []uuid.UUID
		for i := range 20 {
			sub, err := bb.engine.SubmitSource(bb.ctx, "c.rbk", []byte(chainSource(10, i)), runtime.Submission{})
			require.NoError(b, err)
			ids = append(ids, sub.ID)
			time.Sleep(20 * time.Millisecond) // light load: one runbook at a time
		}
		bb.waitAll(b, int64(len(ids)))
		stop()
		for _, id := range ids {
			events, err := bb.store.Events(bb.ctx, id, 0, 0)
			require.NoError(b, err)
			ready := map[string]time.Time{}
			var lastSucceeded time.Time
			for _, e := range events {
				switch e.Type {
				case rbtype.EventStepReady:
					ready[e.StepKey] = e.At
				case rbtype.EventStepStarted:
					fromReady = append(fromReady, e.At.Sub(ready[e.StepKey]))
					if !lastSucceeded.IsZero() {
						fromReturn = append(fromReturn, e.At.Sub(lastSucceeded))
					}
				case rbtype.EventStepSucceeded:
					lastSucceeded = e.At
				}
			}
		}
	}
	reportPercentiles(b, fromReady, "ready")
	reportPercentiles(b, fromReturn, "succeeded-to-next-started")
}

func reportPercentiles(b *testing.B, ds []time.Duration, name string) {
	if len(ds) == 0 {
		b.Fatalf("no %s samples", name)
	}
	slices.Sort(ds)
	at := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	b.ReportMetric(float64(at(0.50).Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(at(0.90).Microseconds())/1000, name+"-p90-ms")
	b.ReportMetric(float64(at(0.95).Microseconds())/1000, name+"-p95-ms")
	b.ReportMetric(float64(at(0.99).Microseconds())/1000, name+"-p99-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, name+"-max-ms")
}
