// Command rbload measures rbd on the machine it runs on, for `make bench`
// and BENCHMARKS.md: throughput of no-op steps, resume latency, the
// engine's per-step overhead, a daemon holding 100k parked runbooks, and
// how compile time scales; the throughput and resume again over a schema
// that holds 100,000 finished runbooks of history (history.go); and,
// beside them, on the same server in the same run, River, a PostgreSQL
// job queue (bin/rbriver, river.go), and DBOS Transact, a workflow engine
// on PostgreSQL (bin/rbdbos, dbos.go).
//
// It starts its own PostgreSQL with a deployment's durability (fsync and
// synchronous commit on), runs the real rbd binary against it, and drives
// it over the HTTP API, as users' programs would. Each measurement runs
// on a fresh schema; the repeated ones report the median of their runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

type options struct {
	rbd, rbc    string
	rbriver     string
	rbdbos      string
	runs        int
	only        []string
	databaseURL string
	out         string
	profile     string

	runbooks  int // throughput: runbooks per run
	steps     int // throughput: steps per runbook
	advancers int
	workers   int // throughput: the several-worker variant's worker rbds

	parkedCount int // resume: runbooks parked
	rate        int // resume: notifications per second

	scale int // parked scale

	riverJobs    int // river: jobs burned down
	riverWorkers int // river: the queue's MaxWorkers in the burn-down
	riverInserts int // river: jobs timed from insert to work

	dbosInFlight int // dbos: chain workflows running at once
	dbosConns    int // dbos: the system database pool's connections

	historyRunbooks int    // history: finished runbooks in the schema
	historySchema   string // history: a schema to fill, or reuse when filled

	compileSizes []int
}

// scenarios run in this order. history, river and dbos follow throughput
// and resume, whose figures their ratios divide; history comes first of
// them, nearest in time to the empty-schema figures it is divided by; all
// come before parked, which leaves 100k runbooks behind in the cluster.
var scenarios = []string{"compile", "throughput", "foreach", "overhead", "resume", "history", "river", "dbos", "parked"}

func main() {
	o := options{}
	flag.StringVar(&o.rbd, "rbd", "bin/rbd", "the rbd binary to measure")
	flag.StringVar(&o.rbc, "rbc", "bin/rbc", "the rbc binary to measure")
	flag.StringVar(&o.rbriver, "rbriver", "bin/rbriver", "river: the River runner (cmd/rbload/rbriver, a module of its own)")
	flag.StringVar(&o.rbdbos, "rbdbos", "bin/rbdbos", "dbos: the DBOS Transact runner (cmd/rbload/rbdbos, a module of its own)")
	flag.IntVar(&o.runs, "runs", 3, "runs of each repeated measurement; the median is reported")
	only := flag.String("only", strings.Join(scenarios, ","), "measurements to run: "+strings.Join(scenarios, ", "))
	flag.StringVar(&o.databaseURL, "database-url", "", "use this PostgreSQL instead of starting one (its database's counters are read too)")
	flag.StringVar(&o.out, "out", "", "also write the results as JSON to this file")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of rbd during the first chain throughput run to this file; the parked scale's\n"+
		"submitting and parking rbd write theirs beside it, with -submit and -park before the extension")
	flag.IntVar(&o.runbooks, "runbooks", 1000, "throughput: runbooks per run")
	flag.IntVar(&o.steps, "steps", 10, "throughput: steps per runbook")
	flag.IntVar(&o.advancers, "advancers", 0, "rbd --advancers (0: rbd's default)")
	flag.IntVar(&o.workers, "workers", 3, "throughput: also run with this many worker rbds on one schema (1: don't)")
	flag.IntVar(&o.parkedCount, "parked", 1000, "resume: runbooks parked, one notification each")
	flag.IntVar(&o.rate, "rate", 200, "resume: notifications per second")
	flag.IntVar(&o.scale, "scale", 100000, "parked scale: runbooks parked at once")
	flag.IntVar(&o.riverJobs, "river-jobs", 50000, "river: no-op jobs pre-inserted for the burn-down")
	flag.IntVar(&o.riverWorkers, "river-workers", 1000, "river: the queue's MaxWorkers in the burn-down")
	flag.IntVar(&o.riverInserts, "river-inserts", 1000, "river: jobs timed from insert to work, at -rate a second")
	flag.IntVar(&o.dbosInFlight, "dbos-in-flight", 200, "dbos: chain workflows running at once (-runbooks of -steps steps in all)")
	flag.IntVar(&o.dbosConns, "dbos-conns", 32, "dbos: the system database pool's connections")
	flag.IntVar(&o.historyRunbooks, "history", 100000, "history: finished ten-step runbooks in the schema that the history variants run on")
	flag.StringVar(&o.historySchema, "history-schema", "", "history: fill this schema, or reuse it if it already holds -history finished runbooks\n"+
		"(with -database-url, whose server outlives the run: fill once, measure many times)")
	sizes := flag.String("compile-sizes", "1000,10000,100000", "compile scaling: runbook sizes in steps")
	flag.Parse()
	o.only = strings.Split(*only, ",")
	for _, s := range o.only {
		if !slices.Contains(scenarios, s) {
			fatalf("unknown measurement %q; choose from %s", s, strings.Join(scenarios, ", "))
		}
	}
	for _, s := range strings.Split(*sizes, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			fatalf("--compile-sizes: %q is not a size", s)
		}
		o.compileSizes = append(o.compileSizes, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fatalf("%v", err)
	}
}

func run(ctx context.Context, o options) error {
	bins := []string{o.rbd, o.rbc}
	if slices.Contains(o.only, "river") {
		bins = append(bins, o.rbriver)
	}
	if slices.Contains(o.only, "dbos") {
		bins = append(bins, o.rbdbos)
	}
	for _, bin := range bins {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%v (make build makes it)", err)
		}
	}
	if o.profile != "" {
		abs, err := filepath.Abs(o.profile)
		if err != nil {
			return err
		}
		o.profile = abs
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return err
		}
	}
	began := time.Now()
	lab, err := newLab(ctx, o)
	if err != nil {
		return err
	}
	defer lab.close()
	report := &report{Machine: describeMachine(), Started: began, Options: o.summary()}
	if lab.pg != nil {
		report.Machine["postgres"] = lab.pg.String() + ", default settings but max_connections=200"
	} else {
		report.Machine["postgres"] = "the server at --database-url"
	}
	for _, name := range scenarios {
		if !slices.Contains(o.only, name) {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logf("== %s", name)
		var err error
		switch name {
		case "compile":
			err = lab.compileScaling(ctx, report)
		case "throughput":
			err = lab.throughput(ctx, report)
		case "foreach":
			err = lab.forEach(ctx, report)
		case "overhead":
			err = lab.overhead(ctx, report)
		case "resume":
			err = lab.resume(ctx, report)
		case "history":
			err = lab.history(ctx, report)
		case "river":
			err = lab.river(ctx, report)
		case "dbos":
			err = lab.dbos(ctx, report)
		case "parked":
			err = lab.parkedScale(ctx, report)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	report.Took = time.Since(began).Round(time.Second).String()
	report.print(os.Stdout)
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
			return err
		}
		if err := report.write(o.out); err != nil {
			return err
		}
		logf("results written to %s", o.out)
	}
	return nil
}

func (o options) summary() map[string]any {
	return map[string]any{
		"runs": o.runs, "runbooks": o.runbooks, "steps": o.steps, "advancers": o.advancers, "workers": o.workers,
		"parked": o.parkedCount, "rate": o.rate, "scale": o.scale, "compile_sizes": o.compileSizes,
		"river_jobs": o.riverJobs, "river_workers": o.riverWorkers, "river_inserts": o.riverInserts,
		"dbos_in_flight": o.dbosInFlight, "dbos_conns": o.dbosConns, "history": o.historyRunbooks,
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s rbload: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rbload: "+format+"\n", args...)
	os.Exit(1)
}

var errTimeout = errors.New("timed out")
