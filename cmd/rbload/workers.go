package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// startWorkers starts n worker rbds on one schema at once and waits until
// all are ready. One keeps rbd's default worker id (host-pid-random), as
// the single-worker figures always have; several are named w1, w2, ... so
// that the ledger's events say plainly who ran what. Each is its own
// process with its own pool, claims and advancers, as separate machines
// would be, but for sharing this one's two cores.
func (l *lab) startWorkers(ctx context.Context, schema, profile string, n int) ([]*daemon, error) {
	if n == 1 {
		d, err := l.startRBD(ctx, schema, profileEnv(profile))
		if err != nil {
			return nil, err
		}
		return []*daemon{d}, nil
	}
	out := make([]*daemon, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	// Started together, so that none runs alone for the others' start-up
	// and the measured window is one of n workers throughout.
	for i := range n {
		wg.Go(func() {
			out[i], errs[i] = l.startRBD(ctx, schema, nil, "--worker-id", fmt.Sprintf("w%d", i+1))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, d := range out {
			if d != nil {
				_ = d.kill()
			}
		}
		return nil, err
	}
	return out, nil
}

// throughputWorkers measures one shape with l.o.workers worker rbds on one
// schema, beside the single worker's figure: the target (docs/runtime.md) is at
// least the throughput of one worker, every step run once (throughputRun
// fails the run otherwise).
//
// The workers get the one worker's runbooks each: n workers, n times the
// work. With only the one worker's 1,000 runbooks, a worker claims 256 at a
// time, so there were four claims to share among three: one worker held
// half the runbooks and set the run's length, and now and then two workers
// took all four claims before the third was ready, which the check below
// (rightly) calls a failure.
func (l *lab) throughputWorkers(ctx context.Context, r *report, shape string, plan []byte, oneWorker float64) error {
	figures := runs{}
	var last map[string]int
	n := l.o.runbooks * l.o.workers
	for run := range l.o.runs {
		byWorker, err := l.throughputRun(ctx, l.schema("tp"), plan, "", n, l.o.workers, figures)
		if err != nil {
			return fmt.Errorf("%d workers: %w", l.o.workers, err)
		}
		if len(byWorker) != l.o.workers {
			return fmt.Errorf("%d workers started, but steps were started by %d: %s", l.o.workers, len(byWorker), shares(byWorker))
		}
		last = byWorker
		logf("%s, %d workers, run %d: %s steps/s (%s)", shape, l.o.workers, run+1, format(figures["steps/s"][run]), shares(byWorker))
	}
	steps := n * l.o.steps
	r.add(fmt.Sprintf("throughput, %s, %d workers (%d runbooks)", shape, l.o.workers, n), figures.median("steps/s"), "steps/s").
		atLeast(oneWorker, fmt.Sprintf("≥ 1 worker (%s)", format(oneWorker))).
		note("%s", notes(fmt.Sprintf("%d worker rbds on one schema; every one of %s steps started once in every run; last run's steps by worker: %s",
			l.o.workers, withCommas(int64(steps)), shares(last)), figures.spread("steps/s")))
	r.add(fmt.Sprintf("  rbd CPU per step (%s, %d workers)", shape, l.o.workers), figures.median("rbd cpu/step"), "µs").
		note("the worker rbds' user + system time over their lives, added")
	if len(figures["pg cpu/step"]) > 0 {
		r.add(fmt.Sprintf("  PostgreSQL CPU per step (%s, %d workers)", shape, l.o.workers), figures.median("pg cpu/step"), "µs").
			note("at least, as for one worker")
	}
	return nil
}
