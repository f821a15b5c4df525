package main

import (
	"context"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/runtime/rbtype"
)

// throughput measures completed no-op steps per second: N runbooks of M
// steps, as chains and as fan-out/fan-in. The runbooks are submitted
// through an API-only rbd first (--worker=false), then one worker rbd is
// started and runs them all; the figure is the steps over the time from
// the first STEP_STARTED to the last RUNBOOK_COMPLETED in the ledger, so
// neither submission nor polling is timed.
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
			if err := l.throughputRun(ctx, plan, profile, figures); err != nil {
				return err
			}
			logf("%s run %d: %s steps/s", shape.name, run+1, format(figures["steps/s"][run]))
		}
		label := fmt.Sprintf("throughput, %s (%d runbooks × %d no-op steps)", shape.name, l.o.runbooks, l.o.steps)
		r.add(label, figures.median("steps/s"), "steps/s").atLeast(10000, "≥ 10,000 steps/s").
			note("1 rbd, %s advancers; %s", advancersText(l.o.advancers), figures.spread("steps/s"))
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
	}
	return nil
}

func advancersText(n int) string {
	if n == 0 {
		return "2 (the default)"
	}
	return fmt.Sprint(n)
}

func (l *lab) throughputRun(ctx context.Context, plan []byte, profile string, figures runs) error {
	schema := l.schema("tp")
	front, err := l.startRBD(ctx, schema, nil, "--worker=false")
	if err != nil {
		return err
	}
	defer front.stop()
	ids, err := submitAll(ctx, front.client, plan, l.o.runbooks, 8, "tp")
	if err != nil {
		return err
	}
	before, err := l.stats.DatabaseStats(ctx)
	if err != nil {
		return err
	}
	pgBefore, err := l.postgresCPU()
	if err != nil {
		return err
	}
	worker, err := l.startRBD(ctx, schema, profileEnv(profile))
	if err != nil {
		return err
	}
	if err := waitNoneExecuting(ctx, front.client, 5*time.Minute); err != nil {
		return err
	}
	if err := worker.stop(); err != nil {
		return err
	}
	// PostgreSQL publishes a backend's counters at most once a second;
	// the worker's backends have exited meanwhile, their CPU counted.
	time.Sleep(1500 * time.Millisecond)
	pgAfter, err := l.postgresCPU()
	if err != nil {
		return err
	}
	after, err := l.stats.DatabaseStats(ctx)
	if err != nil {
		return err
	}
	ledgers, err := eventsOf(ctx, front.client, ids)
	if err != nil {
		return err
	}
	var first, last time.Time
	for i, evs := range ledgers {
		started, ok1 := firstEvent(evs, rbtype.EventStepStarted, "")
		done, ok2 := firstEvent(evs, rbtype.EventRunbookCompleted, "")
		if !ok1 || !ok2 {
			return fmt.Errorf("runbook %s did not complete", ids[i])
		}
		if first.IsZero() || started.At.Before(first) {
			first = started.At
		}
		if done.At.After(last) {
			last = done.At
		}
	}
	steps := float64(l.o.runbooks * l.o.steps)
	figures.add("steps/s", steps/last.Sub(first).Seconds())
	d := after.Sub(before)
	figures.add("commits/step", float64(d.Commits)/steps)
	figures.add("rows/step", float64(d.RowsInserted+d.RowsUpdated+d.RowsDeleted)/steps)
	figures.add("ins/step", float64(d.RowsInserted)/steps)
	figures.add("upd/step", float64(d.RowsUpdated)/steps)
	figures.add("del/step", float64(d.RowsDeleted)/steps)
	figures.add("wal/step", float64(d.WALBytes)/steps)
	rbdCPU := worker.cmd.ProcessState.UserTime() + worker.cmd.ProcessState.SystemTime()
	figures.add("rbd cpu/step", float64(rbdCPU.Microseconds())/steps)
	if l.pg != nil { // its CPU is counted only for the server rbload started
		figures.add("pg cpu/step", float64((pgAfter-pgBefore).Microseconds())/steps)
	}
	return nil
}
