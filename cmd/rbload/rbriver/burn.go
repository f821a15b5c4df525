package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// burnResult is what a burn-down measured. JobsPerSecond is the headline
// and comes from River's own timestamps, the nearest to how rbload times
// rbd (the ledger's first STEP_STARTED to its last RUNBOOK_COMPLETED):
// from the earliest attempted_at (the fetch transaction's now()) to the
// latest finalized_at (the worker's clock when the job returned, which
// River's completer then writes). The worker's own clock, first Work call
// to last return, is beside it.
type burnResult struct {
	Jobs                     int     `json:"jobs"`
	Workers                  int     `json:"workers"`
	FetchCooldownMS          float64 `json:"fetch_cooldown_ms"`
	JobsPerSecond            float64 `json:"jobs_per_s"`
	RiverSpanSeconds         float64 `json:"river_span_s"`
	WorkerClockJobsPerSecond float64 `json:"worker_clock_jobs_per_s"`
	WorkerClockSpanSeconds   float64 `json:"worker_clock_span_s"`
	// StartToStoppedSeconds is the client's whole life, from Start to
	// Stop returning with every completion written.
	StartToStoppedSeconds float64 `json:"start_to_stopped_s"`
}

// burn works every available job in the schema with a started client, then
// stops it and reads the figures back.
func burn(ctx context.Context, o options) (*burnResult, error) {
	pool, err := openPool(ctx, o)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	table := pgx.Identifier{o.schema, "river_job"}.Sanitize()
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE state = 'available'").Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("no available jobs: run rbriver setup first")
	}
	w := &noopWorker{}
	c, err := newClient(pool, o, w)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for w.worked.Load() < int64(n) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d jobs worked after 5 minutes", w.worked.Load(), n)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	// A soft stop waits for the completer to write every completion.
	if err := c.Stop(ctx); err != nil {
		return nil, err
	}
	stopped := time.Since(began)
	var completed, repeated int
	var first, last time.Time
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE attempt > 1),
		min(attempted_at), max(finalized_at) FROM `+table).Scan(&completed, &repeated, &first, &last)
	if err != nil {
		return nil, err
	}
	if completed != n || repeated != 0 {
		return nil, fmt.Errorf("%d jobs: %d completed, %d worked more than once", n, completed, repeated)
	}
	span := last.Sub(first)
	return &burnResult{
		Jobs: n, Workers: o.workers, FetchCooldownMS: ms(o.fetchCooldown),
		JobsPerSecond: float64(n) / span.Seconds(), RiverSpanSeconds: span.Seconds(),
		WorkerClockJobsPerSecond: float64(n) / w.span().Seconds(), WorkerClockSpanSeconds: w.span().Seconds(),
		StartToStoppedSeconds: stopped.Seconds(),
	}, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
