package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// dbosVersion is the DBOS Transact release cmd/rbload/rbdbos builds with
// (its go.mod).
const dbosVersion = "v1.8.0"

// dbosChain and dbosResume are what rbdbos prints (its chainResult and
// resumeResult, by their JSON names): the runner is a module of its own,
// so that DBOS stays out of this one's graph, and cannot be imported.
type dbosChain struct {
	StepsPerSecond      float64 `json:"steps_per_s"`
	LaunchToDoneSeconds float64 `json:"launch_to_done_s"`
}

type dbosResume struct {
	SendToStepMS       []float64 `json:"send_to_step_ms"`
	SendReturnMedianMS float64   `json:"send_return_median_ms"`
}

// dbos measures DBOS Transact for Go (github.com/dbos-inc/dbos-transact-golang),
// the workflow engine nearest to rbd, on the same PostgreSQL in the same
// run, through bin/rbdbos (BENCHMARKS.md). Each run has a schema of its own,
// migrated with DBOS's dbos.Migrate by a setup process first, so that the
// measured process starts on a migrated system database.
//
//   - chains: -runbooks workflows of -steps no-op RunAsStep steps, the
//     same counts as rbd's chain throughput, -dbos-in-flight (200) running
//     at once, in one process with a pool of -dbos-conns (32)
//     connections. Steps/s is from the first step's start to the last
//     workflow's end (its outcome recorded), as rbd's is from the ledger's
//     first STEP_STARTED to its last RUNBOOK_COMPLETED; each workflow's
//     start is inside that window (rbd's runbooks are submitted before
//     it). The process checks from DBOS's tables that every step was
//     recorded once. PostgreSQL's counters and CPU are read around it.
//   - resume: -parked workflows wait in Recv, as many as rbd's parked
//     runbooks; each is sent its message with Send at -rate a second and
//     timed from the call to Send to the start of the step after its Recv,
//     one process's monotonic clock: as rbd's resume is timed from the
//     webhook's send to the dependent step's STEP_STARTED.
func (l *lab) dbos(ctx context.Context, r *report) error {
	chains := runs{}
	for run := range l.o.runs {
		if err := l.dbosChainRun(ctx, chains); err != nil {
			return err
		}
		logf("dbos chains run %d: %s steps/s", run+1, format(chains["steps/s"][run]))
	}
	waits := runs{}
	for run := range l.o.runs {
		if err := l.dbosResumeRun(ctx, waits); err != nil {
			return err
		}
		logf("dbos send→step run %d: p50 %.2f ms, p99 %.2f ms", run+1, waits["p50"][run], waits["p99"][run])
	}
	r.add(fmt.Sprintf("DBOS chains (%s workflows × %d no-op RunAsStep steps, %d in flight, %d connections)",
		withCommas(int64(l.o.runbooks)), l.o.steps, l.o.dbosInFlight, l.o.dbosConns), chains.median("steps/s"), "steps/s").
		note("%s", notes("DBOS Transact "+dbosVersion+", one process; first step started → last workflow ended, its start inside the window",
			"started → ended "+format(chains.median("launch s"))+" s", chains.spread("steps/s")))
	r.add("  PostgreSQL commits per step (DBOS)", chains.median("commits/step"), "")
	r.add("  rows written per step (DBOS)", chains.median("rows/step"), "").
		note("inserted %s, updated %s, deleted %s; the workflow's own rows included", format(chains.median("ins/step")),
			format(chains.median("upd/step")), format(chains.median("del/step")))
	r.add("  DBOS CPU per step", chains.median("dbos cpu/step"), "µs").note("rbdbos's user + system time over the chain process's life")
	if len(chains["pg cpu/step"]) > 0 {
		r.add("  PostgreSQL CPU per step (DBOS)", chains.median("pg cpu/step"), "µs").
			note("at least, as for rbd: backends and autovacuum workers that exited")
	}
	label := fmt.Sprintf("DBOS Send → next step at %d/s (%s waiting in Recv), ", l.o.rate, withCommas(int64(l.o.parkedCount)))
	r.add(label+"p50", waits.median("p50"), "ms").
		note("%s", notes("Send called → the step after Recv started, one process's clock",
			fmt.Sprintf("Send returned after %.2f ms (p50)", waits.median("send")), waits.spread("p50")))
	r.add(label+"p95", waits.median("p95"), "ms").note("%s", waits.spread("p95"))
	r.add(label+"p99", waits.median("p99"), "ms").note("%s", waits.spread("p99"))
	r.add(label+"max", waits.median("max"), "ms")
	if len(waits["pg cpu/workflow"]) > 0 {
		r.add("  PostgreSQL CPU per workflow, the whole resume run (DBOS)", waits.median("pg cpu/workflow"), "µs").
			note("start, wait in Recv, Send, the step after; backends that exited, as for rbd's whole run")
	}
	l.besideDBOS(r, chains.median("steps/s"), waits.median("p50"), waits.median("p99"))
	return nil
}

// dbosChainRun migrates a schema, then runs the chains in a second
// process, the one measured.
func (l *lab) dbosChainRun(ctx context.Context, figures runs) error {
	schema := l.schema("dbos")
	if _, _, err := l.runPeer(ctx, l.o.rbdbos, "setup", schema); err != nil {
		return err
	}
	var c dbosChain
	var cpu float64
	d, pgCPU, err := l.counted(ctx, func() error {
		out, state, err := l.runPeer(ctx, l.o.rbdbos, "chain", schema, "--workflows", strconv.Itoa(l.o.runbooks),
			"--steps", strconv.Itoa(l.o.steps), "--in-flight", strconv.Itoa(l.o.dbosInFlight), "--max-conns", strconv.Itoa(l.o.dbosConns))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(out, &c); err != nil {
			return fmt.Errorf("rbdbos chain printed %q: %w", out, err)
		}
		cpu = float64((state.UserTime() + state.SystemTime()).Microseconds())
		return nil
	})
	if err != nil {
		return err
	}
	steps := float64(l.o.runbooks * l.o.steps)
	figures.add("steps/s", c.StepsPerSecond)
	figures.add("launch s", c.LaunchToDoneSeconds)
	figures.add("commits/step", float64(d.Commits)/steps)
	figures.add("rows/step", float64(d.RowsInserted+d.RowsUpdated+d.RowsDeleted)/steps)
	figures.add("ins/step", float64(d.RowsInserted)/steps)
	figures.add("upd/step", float64(d.RowsUpdated)/steps)
	figures.add("del/step", float64(d.RowsDeleted)/steps)
	figures.add("dbos cpu/step", cpu/steps)
	if pgCPU > 0 { // a server on this machine (postgresCPU)
		figures.add("pg cpu/step", float64(pgCPU.Microseconds())/steps)
	}
	return nil
}

// dbosResumeRun times Send → next step on a schema of its own.
func (l *lab) dbosResumeRun(ctx context.Context, figures runs) error {
	schema := l.schema("dbos")
	if _, _, err := l.runPeer(ctx, l.o.rbdbos, "setup", schema); err != nil {
		return err
	}
	var out []byte
	_, pgCPU, err := l.counted(ctx, func() (err error) {
		out, _, err = l.runPeer(ctx, l.o.rbdbos, "resume", schema, "--workflows", strconv.Itoa(l.o.parkedCount),
			"--rate", strconv.Itoa(l.o.rate), "--max-conns", strconv.Itoa(l.o.dbosConns))
		return err
	})
	if err != nil {
		return err
	}
	if pgCPU > 0 {
		figures.add("pg cpu/workflow", float64(pgCPU.Microseconds())/float64(l.o.parkedCount))
	}
	var res dbosResume
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("rbdbos resume printed %q: %w", out, err)
	}
	for _, p := range []float64{50, 90, 95, 99} {
		figures.add(fmt.Sprintf("p%g", p), percentile(res.SendToStepMS, p))
	}
	figures.add("max", percentile(res.SendToStepMS, 100))
	figures.add("send", res.SendReturnMedianMS)
	return nil
}
