package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/rbtype"
)

// throughput measures completed no-op steps per second: N runbooks of M
// steps, as chains and as fan-out/fan-in. The runbooks are submitted
// through an API-only rbd first (--worker=false), then one worker rbd is
// started and runs them all; the figure is the steps over the time from
// the first STEP_STARTED to the last RUNBOOK_COMPLETED in the ledger, so
// neither submission nor polling is timed. Then the same again with
// several worker rbds on the schema at once (-workers), which must share
// the steps without running any twice.
func (l *lab) throughput(ctx context.Context, r *report) error {
	shapes := []struct {
		name string
		src  string
	}{
		{"chain", chainSource(l.o.steps)},
		{"fan-out/fan-in", fanSource(l.o.steps)},
	}
	for si, shape := range shapes {
		plan, err := compilePlan(shape.src)
		if err != nil {
			return err
		}
		figures := runs{}
		for run := range l.o.runs {
			profile := ""
			if si == 0 && run == 0 {
				profile = l.o.profile
			}
			if _, err := l.throughputRun(ctx, l.schema("tp"), plan, profile, l.o.runbooks, 1, figures); err != nil {
				return err
			}
			logf("%s run %d: %s steps/s", shape.name, run+1, format(figures["steps/s"][run]))
		}
		label := fmt.Sprintf("throughput, %s (%d runbooks × %d no-op steps)", shape.name, l.o.runbooks, l.o.steps)
		r.add(label, figures.median("steps/s"), "steps/s").atLeast(10000, "≥ 10,000 steps/s").
			note("%s", notes(fmt.Sprintf("1 rbd, %s advancers", advancersText(l.o.advancers)), figures.spread("steps/s")))
		l.rbdStepsPerSecond[shape.name] = figures.median("steps/s")
		if si == 0 {
			r.add("  PostgreSQL commits per step (chain)", figures.median("commits/step"), "")
			r.add("  rows written per step (chain)", figures.median("rows/step"), "").
				note("inserted %s, updated %s, deleted %s", format(figures.median("ins/step")), format(figures.median("upd/step")), format(figures.median("del/step")))
			r.add("  WAL per step (chain)", figures.median("wal/step"), "bytes")
		}
		r.add(fmt.Sprintf("  rbd CPU per step (%s)", shape.name), figures.median("rbd cpu/step"), "µs").
			note("the worker rbd's user + system time over its life")
		if len(figures["pg cpu/step"]) > 0 {
			r.add(fmt.Sprintf("  PostgreSQL CPU per step (%s)", shape.name), figures.median("pg cpu/step"), "µs").
				note("at least: backends and autovacuum workers that exited; not the checkpointer or WAL writer")
		}
		if l.o.workers > 1 {
			if err := l.throughputWorkers(ctx, r, shape.name, plan, figures.median("steps/s")); err != nil {
				return err
			}
		}
	}
	return l.inlineThroughput(ctx, r)
}

// inlineThroughput measures the same chains with a verb declared pure,
// whose steps rbd calls inside the advance that starts them, with no
// lease and no second transaction (docs/runtime.md: inline steps). Reported
// apart: it is not the leased path the River comparison is about.
func (l *lab) inlineThroughput(ctx context.Context, r *report) error {
	plan, err := compilePlan(chainOf("b.pure", l.o.steps))
	if err != nil {
		return err
	}
	figures := runs{}
	for run := range l.o.runs {
		if _, err := l.throughputRun(ctx, l.schema("tp"), plan, "", l.o.runbooks, 1, figures); err != nil {
			return fmt.Errorf("inline: %w", err)
		}
		logf("inline chain run %d: %s steps/s", run+1, format(figures["steps/s"][run]))
	}
	r.add(fmt.Sprintf("inline steps, chain (%d runbooks × %d pure no-op steps)", l.o.runbooks, l.o.steps), figures.median("steps/s"), "steps/s").
		note("%s", notes("1 rbd; b.pure is core.echo with determinism: pure, called inside the advance without a lease; not the leased target", figures.spread("steps/s")))
	r.add("  rows written per step (inline chain)", figures.median("rows/step"), "").
		note("inserted %s, updated %s, deleted %s", format(figures.median("ins/step")), format(figures.median("upd/step")), format(figures.median("del/step")))
	r.add("  rbd CPU per step (inline chain)", figures.median("rbd cpu/step"), "µs")
	if len(figures["pg cpu/step"]) > 0 {
		r.add("  PostgreSQL CPU per step (inline chain)", figures.median("pg cpu/step"), "µs")
	}
	return nil
}

func advancersText(n int) string {
	if n == 0 {
		return "2 (the default)"
	}
	return fmt.Sprint(n)
}

// throughputRun submits n runbooks to a schema, runs them with `workers`
// worker rbds, checks that every step ran once, and adds the run's
// figures. It returns how many steps each worker started. The schema is
// a fresh one, or the history's (history.go), whose finished runbooks
// the checks leave out.
func (l *lab) throughputRun(ctx context.Context, schema string, plan []byte, profile string, n, workers int, figures runs) (map[string]int, error) {
	front, err := l.startRBD(ctx, schema, nil, "--worker=false")
	if err != nil {
		return nil, err
	}
	defer front.stop()
	ids, err := submitAll(ctx, front.client, plan, n, 8, batchTag("tp"))
	if err != nil {
		return nil, err
	}
	before, err := l.stats.DatabaseStats(ctx)
	if err != nil {
		return nil, err
	}
	pgBefore, err := l.postgresCPU()
	if err != nil {
		return nil, err
	}
	started, err := l.startWorkers(ctx, schema, profile, workers)
	if err != nil {
		return nil, err
	}
	if err := waitNoneExecuting(ctx, front.client, 5*time.Minute); err != nil {
		for _, worker := range started {
			_ = worker.kill()
		}
		return nil, err
	}
	// Every worker is stopped, even after one fails to: none may outlive
	// the run.
	var rbdCPU time.Duration
	var stopErrs []error
	for _, worker := range started {
		if err := worker.stop(); err != nil {
			stopErrs = append(stopErrs, err)
			continue
		}
		rbdCPU += worker.cmd.ProcessState.UserTime() + worker.cmd.ProcessState.SystemTime()
	}
	if err := errors.Join(stopErrs...); err != nil {
		return nil, err
	}
	// PostgreSQL publishes a backend's counters at most once a second;
	// the worker's backends have exited meanwhile, their CPU counted.
	time.Sleep(1500 * time.Millisecond)
	pgAfter, err := l.postgresCPU()
	if err != nil {
		return nil, err
	}
	after, err := l.stats.DatabaseStats(ctx)
	if err != nil {
		return nil, err
	}
	ledgers, err := eventsOf(ctx, front.client, ids)
	if err != nil {
		return nil, err
	}
	byWorker, err := stepsOnce(ids, ledgers, l.o.steps)
	if err != nil {
		return nil, err
	}
	if err := l.attemptsOnce(ctx, schema, ids, l.o.steps); err != nil {
		return nil, err
	}
	var first, last time.Time
	for i, evs := range ledgers {
		started, ok1 := firstEvent(evs, rbtype.EventStepStarted, "")
		done, ok2 := firstEvent(evs, rbtype.EventRunbookCompleted, "")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("runbook %s did not complete", ids[i])
		}
		if first.IsZero() || started.At.Before(first) {
			first = started.At
		}
		if done.At.After(last) {
			last = done.At
		}
	}
	steps := float64(n * l.o.steps)
	figures.add("steps/s", steps/last.Sub(first).Seconds())
	d := after.Sub(before)
	figures.add("commits/step", float64(d.Commits)/steps)
	figures.add("rows/step", float64(d.RowsInserted+d.RowsUpdated+d.RowsDeleted)/steps)
	figures.add("ins/step", float64(d.RowsInserted)/steps)
	figures.add("upd/step", float64(d.RowsUpdated)/steps)
	figures.add("del/step", float64(d.RowsDeleted)/steps)
	figures.add("wal/step", float64(d.WALBytes)/steps)
	figures.add("rbd cpu/step", float64(rbdCPU.Microseconds())/steps)
	if pgAfter > 0 { // its CPU is counted only for a server on this machine (postgresCPU)
		figures.add("pg cpu/step", float64((pgAfter-pgBefore).Microseconds())/steps)
	}
	return byWorker, nil
}
