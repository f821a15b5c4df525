package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5/pgxpool"
)

// topic is what the waiting workflows Recv on and the sender Sends to.
const topic = "wake"

// settle is how long the waiting workflows are left before the first
// Send, so that the run times steady state, not their start.
const settle = time.Second

// resumeResult is what a resume run measured: for each workflow, the
// time from the call to Send (the producer acting, as rbd's resume run
// times from the webhook's send) to the start of the step after its
// Recv, on one process's monotonic clock; and how long Send took to
// return (its insert's commit), as the webhook's 202 is beside rbd's.
type resumeResult struct {
	Workflows          int       `json:"workflows"`
	Rate               int       `json:"rate"`
	MaxConns           int       `json:"max_conns"`
	SendToStepMS       []float64 `json:"send_to_step_ms"`
	SendReturnMedianMS float64   `json:"send_return_median_ms"`
}

// waiters keeps when each workflow's step after Recv started, by
// workflow id.
type waiters struct {
	mu      sync.Mutex
	started map[string]time.Time
}

// workflow waits in Recv for its message, then runs one no-op step, whose
// start is the moment measured.
func (w *waiters) workflow(ctx dbos.Context, _ int) (int, error) {
	if _, err := dbos.Recv[string](ctx, topic, time.Hour); err != nil {
		return 0, err
	}
	id, err := dbos.GetWorkflowID(ctx)
	if err != nil {
		return 0, err
	}
	_, err = dbos.RunAsStep(ctx, func(context.Context) (int, error) {
		now := time.Now()
		w.mu.Lock()
		w.started[id] = now
		w.mu.Unlock()
		return 0, nil
	}, dbos.WithStepName("next"))
	return 0, err
}

// resume starts o.workflows workflows that wait in Recv, waits until every
// one is waiting, then Sends each its message, o.rate a second, each from
// its own goroutine so that a slow commit does not delay the next Send.
// The Sends come from the process that runs the workflows, as a webhook
// reaches the rbd that runs the worker.
func resume(ctx context.Context, o options) (*resumeResult, error) {
	w := &waiters{started: make(map[string]time.Time, o.workflows)}
	dctx, pool, stop, err := launch(ctx, o, func(d dbos.Context) {
		dbos.RegisterWorkflow(d, w.workflow, dbos.WithWorkflowName("waiter"))
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	ids := make([]string, o.workflows)
	handles := make([]dbos.WorkflowHandle[int], o.workflows)
	for i := range ids {
		ids[i] = fmt.Sprintf("waiter-%d", i)
		handles[i], err = dbos.RunWorkflow(dctx, w.workflow, i, dbos.WithWorkflowID(ids[i]))
		if err != nil {
			return nil, fmt.Errorf("workflow %s: %w", ids[i], err)
		}
	}
	if err := waitWaiting(ctx, o, pool, 5*time.Minute); err != nil {
		return nil, err
	}
	time.Sleep(settle)

	sent, returned := make([]time.Time, o.workflows), make([]time.Time, o.workflows)
	errs := make(chan error, o.workflows)
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i, id := range ids {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		wg.Go(func() {
			sent[i] = time.Now()
			err := dbos.Send(dctx, id, "go", topic)
			returned[i] = time.Now()
			if err != nil {
				errs <- fmt.Errorf("send to %s: %w", id, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return nil, err
	}
	for i, h := range handles {
		if _, err := h.GetResult(dbos.WithHandleTimeout(time.Minute)); err != nil {
			return nil, fmt.Errorf("workflow %s: %w", ids[i], err)
		}
	}
	out := &resumeResult{Workflows: o.workflows, Rate: o.rate, MaxConns: o.maxConns}
	sends := make([]float64, o.workflows)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, id := range ids {
		started, ok := w.started[id]
		if !ok {
			return nil, fmt.Errorf("workflow %s ended without its step after Recv", id)
		}
		out.SendToStepMS = append(out.SendToStepMS, ms(started.Sub(sent[i])))
		sends[i] = ms(returned[i].Sub(sent[i]))
	}
	slices.Sort(sends)
	out.SendReturnMedianMS = sends[len(sends)/2]
	return out, nil
}

// waitWaiting polls DBOS's operation_outputs until every workflow has
// checkpointed its Recv's deadline: the DBOS.sleep step that Recv records
// after registering for its message and before it waits.
func waitWaiting(ctx context.Context, o options, pool *pgxpool.Pool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table(o, "operation_outputs")+` WHERE function_name = 'DBOS.sleep'`).Scan(&n)
		if err != nil {
			return err
		}
		if n >= o.workflows {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workflows waiting in Recv after %s", n, o.workflows, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
