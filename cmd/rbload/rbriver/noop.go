package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// noopArgs is the measured job: it carries nothing and does nothing, like
// rbd's core.echo no-op step.
type noopArgs struct{}

// Kind names the job in River's table.
func (noopArgs) Kind() string { return "rbriver_noop" }

// noopWorker works noop jobs and keeps the worker's clock: when the first
// job started and the last one finished (nanoseconds on the monotonic
// clock since the process began), how many were worked, and, when asked,
// each job's start time by id for the latency measurement.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]

	worked      atomic.Int64
	firstStart  atomic.Int64
	lastFinish  atomic.Int64
	keepStarts  bool
	mu          sync.Mutex
	startedByID map[int64]time.Time
}

// epoch is the origin of the worker's clock; time.Since reads the
// monotonic clock, so a wall-clock step does not bend the figures.
var epoch = time.Now()

// Work records the start and finish of a job that does nothing.
func (w *noopWorker) Work(_ context.Context, job *river.Job[noopArgs]) error {
	now := time.Now()
	start := int64(now.Sub(epoch))
	// firstStart is 0 until set; the first start is never at 0 exactly.
	for {
		cur := w.firstStart.Load()
		if (cur != 0 && cur <= start) || w.firstStart.CompareAndSwap(cur, start) {
			break
		}
	}
	if w.keepStarts {
		w.mu.Lock()
		w.startedByID[job.ID] = now
		w.mu.Unlock()
	}
	w.worked.Add(1)
	finish := int64(time.Since(epoch))
	for {
		cur := w.lastFinish.Load()
		if cur >= finish || w.lastFinish.CompareAndSwap(cur, finish) {
			break
		}
	}
	return nil
}

// span is the worker's clock from the first start to the last finish.
func (w *noopWorker) span() time.Duration {
	return time.Duration(w.lastFinish.Load() - w.firstStart.Load())
}
