package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// chainResult is what a chain run measured. StepsPerSecond is the
// headline: every step of every workflow over the time from the first
// step's start to the last workflow's end (DBOS records a workflow's
// outcome before its handle returns), on the process's monotonic clock:
// the nearest to how rbload times rbd, from the ledger's first
// STEP_STARTED to its last RUNBOOK_COMPLETED. Unlike rbd's runbooks,
// which are submitted before the measured worker starts, each workflow
// is started (its workflow_status row inserted) inside the window: DBOS
// runs a workflow where it is started, and a queue would add its polling.
type chainResult struct {
	Workflows      int     `json:"workflows"`
	Steps          int     `json:"steps"`
	InFlight       int     `json:"in_flight"`
	MaxConns       int     `json:"max_conns"`
	StepsPerSecond float64 `json:"steps_per_s"`
	SpanSeconds    float64 `json:"span_s"`
	// LaunchToDoneSeconds is from the first RunWorkflow call to the last
	// workflow's end.
	LaunchToDoneSeconds float64 `json:"launch_to_done_s"`
}

// chainClock keeps the chain steps' clock: how many ran, and when the
// first started (nanoseconds since epoch on the monotonic clock; 0 until
// set).
type chainClock struct {
	ran        atomic.Int64
	firstStart atomic.Int64
}

// epoch is the origin of the process's clock; time.Since reads the
// monotonic clock, so a wall-clock step does not bend the figures.
var epoch = time.Now()

// noop is the measured step: it does nothing, like rbd's core.echo no-op
// step, but note that it ran.
func (c *chainClock) noop(context.Context) (int, error) {
	now := int64(time.Since(epoch))
	c.firstStart.CompareAndSwap(0, now)
	c.ran.Add(1)
	return 0, nil
}

// workflow is a chain: steps no-op steps, each after the one before.
func (c *chainClock) workflow(ctx dbos.Context, steps int) (int, error) {
	for range steps {
		if _, err := dbos.RunAsStep(ctx, c.noop, dbos.WithStepName("noop")); err != nil {
			return 0, err
		}
	}
	return steps, nil
}

// chain runs o.workflows chains of o.steps no-op steps, o.inFlight at a
// time, and checks from DBOS's tables that each step was recorded once.
func chain(ctx context.Context, o options) (*chainResult, error) {
	clock := &chainClock{}
	dctx, pool, stop, err := launch(ctx, o, func(d dbos.Context) {
		dbos.RegisterWorkflow(d, clock.workflow, dbos.WithWorkflowName("chain"))
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	slots := make(chan struct{}, o.inFlight)
	errs := make(chan error, o.workflows)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range o.workflows {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-slots }()
			h, err := dbos.RunWorkflow(dctx, clock.workflow, o.steps, dbos.WithWorkflowID(fmt.Sprintf("chain-%d", i)))
			if err == nil {
				_, err = h.GetResult()
			}
			if err != nil {
				errs <- fmt.Errorf("workflow chain-%d: %w", i, err)
			}
		})
	}
	wg.Wait()
	done := time.Since(epoch)
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return nil, err
	}
	want := int64(o.workflows * o.steps)
	if ran := clock.ran.Load(); ran != want {
		return nil, fmt.Errorf("%d no-op steps ran for %d workflows of %d steps", ran, o.workflows, o.steps)
	}
	var recorded, succeeded int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table(o, "operation_outputs")+` WHERE function_name = 'noop'`).Scan(&recorded); err != nil {
		return nil, err
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table(o, "workflow_status")+` WHERE status = 'SUCCESS'`).Scan(&succeeded); err != nil {
		return nil, err
	}
	if recorded != want || succeeded != int64(o.workflows) {
		return nil, fmt.Errorf("DBOS recorded %d no-op steps and %d succeeded workflows; want %d and %d", recorded, succeeded, want, o.workflows)
	}
	span := done - time.Duration(clock.firstStart.Load())
	return &chainResult{
		Workflows: o.workflows, Steps: o.steps, InFlight: o.inFlight, MaxConns: o.maxConns,
		StepsPerSecond: float64(want) / span.Seconds(), SpanSeconds: span.Seconds(),
		LaunchToDoneSeconds: (done - began.Sub(epoch)).Seconds(),
	}, nil
}

// collect drains a closed channel of errors.
func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}
