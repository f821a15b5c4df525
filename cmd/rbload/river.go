package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Fetch cooldowns of the two River measurements (docs/runtime.md): 2 ms for the
// burn-down, near River's floor (1 ms) without spinning on empty fetches;
// 1 ms for latency, River's floor. The poll interval stays River's
// default (1 s): a job is fetched on the insert's LISTEN/NOTIFY, and a
// 1 ms poll was slower here (p50 1.4 ms against 0.8), polling on the
// same two cores.
const (
	riverBurnCooldown    = 2 * time.Millisecond
	riverLatencyCooldown = 1 * time.Millisecond
)

// riverBurn and riverLatency are what rbriver prints (its burnResult and
// latencyResult, by their JSON names): the runner is a module of its own,
// so that River stays out of this one's graph, and cannot be imported.
type riverBurn struct {
	Jobs                     int     `json:"jobs"`
	JobsPerSecond            float64 `json:"jobs_per_s"`
	WorkerClockJobsPerSecond float64 `json:"worker_clock_jobs_per_s"`
	StartToStoppedSeconds    float64 `json:"start_to_stopped_s"`
}

type riverLatency struct {
	InsertToWorkMS       []float64 `json:"insert_to_work_ms"`
	InsertSentToWorkMS   []float64 `json:"insert_sent_to_work_ms"`
	InsertCommitMedianMS float64   `json:"insert_commit_median_ms"`
}

// river measures River (github.com/riverqueue/river), a PostgreSQL job
// queue, on the same PostgreSQL in the same run, through bin/rbriver, so
// that rbd's figures can be read against a plain queue's on this machine
// as it is now (docs/runtime.md). Each run has a schema of its own, migrated
// with River's rivermigrate.
//
//   - burn-down: -river-jobs no-op jobs are inserted, then one River
//     client with -river-workers workers and a 2 ms fetch cooldown works
//     them all. Jobs/s is from River's own timestamps (earliest
//     attempted_at to latest finalized_at), as rbd's throughput is from
//     its ledger's; PostgreSQL's counters and CPU are read around the
//     working process alone, as around rbd's worker.
//   - insert-to-work: -river-inserts jobs inserted one at a time at -rate
//     a second into a started client with a 1 ms fetch cooldown; each is
//     timed from its insert's commit to its Work call (River's own
//     measure, and docs/runtime.md's), and from the call to Insert to its Work
//     call. The second is the one like rbd's resume, which is timed from
//     the webhook's send: rbd starts the step inside the notification's
//     own transaction, before its commit, so from the commit it would
//     read zero or less.
func (l *lab) river(ctx context.Context, r *report) error {
	burns := runs{}
	for run := range l.o.runs {
		if err := l.riverBurnRun(ctx, burns); err != nil {
			return err
		}
		logf("river burn-down run %d: %s jobs/s", run+1, format(burns["jobs/s"][run]))
	}
	lat := runs{}
	for run := range l.o.runs {
		if err := l.riverLatencyRun(ctx, lat); err != nil {
			return err
		}
		logf("river insert-to-work run %d: p50 %.2f ms, p99 %.2f ms", run+1, lat["p50"][run], lat["p99"][run])
	}
	r.add(fmt.Sprintf("River burn-down (%s no-op jobs, %s workers, %d ms fetch cooldown)",
		withCommas(int64(l.o.riverJobs)), withCommas(int64(l.o.riverWorkers)), riverBurnCooldown.Milliseconds()), burns.median("jobs/s"), "jobs/s").
		note("%s", notes("River v0.51.1 (riverpgxv5), one client; River's timestamps, first attempted_at → last finalized_at",
			"worker's clock "+format(burns.median("worker jobs/s"))+" jobs/s", burns.spread("jobs/s")))
	r.add("  rows written per job (River)", burns.median("rows/job"), "").
		note("inserted %s, updated %s, deleted %s", format(burns.median("ins/job")), format(burns.median("upd/job")), format(burns.median("del/job")))
	r.add("  River CPU per job", burns.median("river cpu/job"), "µs").note("rbriver's user + system time over the burn-down process's life")
	if len(burns["pg cpu/job"]) > 0 {
		r.add("  PostgreSQL CPU per job (River)", burns.median("pg cpu/job"), "µs").
			note("at least, as for rbd: backends and autovacuum workers that exited")
	}
	label := fmt.Sprintf("River insert-to-work at %d/s (%s jobs, %d ms fetch cooldown), ", l.o.rate,
		withCommas(int64(l.o.riverInserts)), riverLatencyCooldown.Milliseconds())
	r.add(label+"p50", lat.median("p50"), "ms").
		note("%s", notes("insert committed (Insert returned) → Work called, one process's clock",
			fmt.Sprintf("the insert's own commit p50 %.2f ms", lat.median("commit")), lat.spread("p50")))
	r.add(label+"p99", lat.median("p99"), "ms").note("%s", lat.spread("p99"))
	r.add(label+"max", lat.median("max"), "ms")
	r.add(fmt.Sprintf("River insert sent → worked at %d/s, p50", l.o.rate), lat.median("sent p50"), "ms").
		note("%s", notes("Insert called → Work called: the producer's own insert and commit included, as rbd's resume includes the webhook", lat.spread("sent p50")))
	r.add(fmt.Sprintf("River insert sent → worked at %d/s, p99", l.o.rate), lat.median("sent p99"), "ms").note("%s", lat.spread("sent p99"))
	l.sideBySide(r, burns.median("jobs/s"), lat.median("p50"), lat.median("sent p50"))
	return nil
}

// riverBurnRun sets up a schema of pre-inserted jobs, then burns them
// down in a second process, the one measured.
func (l *lab) riverBurnRun(ctx context.Context, figures runs) error {
	schema := l.schema("river")
	if _, _, err := l.runPeer(ctx, l.o.rbriver, "setup", schema, "--jobs", strconv.Itoa(l.o.riverJobs)); err != nil {
		return err
	}
	var out []byte
	var state *os.ProcessState
	d, pgCPU, err := l.counted(ctx, func() error {
		var err error
		out, state, err = l.runPeer(ctx, l.o.rbriver, "burn", schema, "--workers", strconv.Itoa(l.o.riverWorkers),
			"--fetch-cooldown", riverBurnCooldown.String())
		return err
	})
	if err != nil {
		return err
	}
	var b riverBurn
	if err := json.Unmarshal(out, &b); err != nil {
		return fmt.Errorf("rbriver burn printed %q: %w", out, err)
	}
	jobs := float64(b.Jobs)
	figures.add("jobs/s", b.JobsPerSecond)
	figures.add("worker jobs/s", b.WorkerClockJobsPerSecond)
	figures.add("rows/job", float64(d.RowsInserted+d.RowsUpdated+d.RowsDeleted)/jobs)
	figures.add("ins/job", float64(d.RowsInserted)/jobs)
	figures.add("upd/job", float64(d.RowsUpdated)/jobs)
	figures.add("del/job", float64(d.RowsDeleted)/jobs)
	figures.add("river cpu/job", float64((state.UserTime()+state.SystemTime()).Microseconds())/jobs)
	if pgCPU > 0 { // a server on this machine (postgresCPU)
		figures.add("pg cpu/job", float64(pgCPU.Microseconds())/jobs)
	}
	return nil
}

// riverLatencyRun times jobs from insert to work on a schema of its own.
func (l *lab) riverLatencyRun(ctx context.Context, figures runs) error {
	out, _, err := l.runPeer(ctx, l.o.rbriver, "latency", l.schema("river"), "--jobs", strconv.Itoa(l.o.riverInserts),
		"--rate", strconv.Itoa(l.o.rate), "--fetch-cooldown", riverLatencyCooldown.String())
	if err != nil {
		return err
	}
	var lr riverLatency
	if err := json.Unmarshal(out, &lr); err != nil {
		return fmt.Errorf("rbriver latency printed %q: %w", out, err)
	}
	for _, p := range []float64{50, 90, 99} {
		figures.add(fmt.Sprintf("p%g", p), percentile(lr.InsertToWorkMS, p))
	}
	figures.add("max", percentile(lr.InsertToWorkMS, 100))
	figures.add("sent p50", percentile(lr.InsertSentToWorkMS, 50))
	figures.add("sent p99", percentile(lr.InsertSentToWorkMS, 99))
	figures.add("commit", lr.InsertCommitMedianMS)
	return nil
}
