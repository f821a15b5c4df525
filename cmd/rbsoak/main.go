// Command rbsoak is `make soak`: it runs rbd under load while injecting
// faults at random moments, then checks that the promise held: no side
// effect repeated, no notification lost, every runbook where its script
// leads, every ledger a valid sequence, no lease left held, no memory
// growing without bound.
//
// It starts its own PostgreSQL, three rbd workers and one rbd that serves
// only the API (and receives the webhooks), and a test service that
// records every effect by idempotency key and completes durable tasks by
// signed webhook. The mix of runbooks, the faults and their moments come
// from --seed, so a failing run can be repeated (timing still varies: the
// seed fixes what is done, not how the scheduler interleaves it).
//
// It prints the figures and exits 1 on any violation, keeping the seed,
// the figures and every process's log in --out.
package main

import (
	"context"
	"encoding/json"
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
	rbd      string
	duration time.Duration
	seed     uint64
	workers  int
	rate     float64
	faultGap time.Duration
	settle   time.Duration
	out      string
	maxRSS   int64
	keepLogs bool
	faults   []string
	// databaseURL is a PostgreSQL of the operator's (make cluster's) to
	// soak on instead of one of rbsoak's own; failoverCmd is the command
	// that carries out the failover faults on it (cluster/cluster.sh).
	databaseURL string
	failoverCmd string
}

func main() {
	o := options{}
	flag.StringVar(&o.rbd, "rbd", "bin/rbd", "the rbd binary to run")
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long to submit runbooks and inject faults (then the run settles)")
	flag.Uint64Var(&o.seed, "seed", 0, "the seed of the mix and the faults; 0 picks one from the clock (printed, to repeat the run)")
	flag.IntVar(&o.workers, "workers", 3, "rbd worker processes (beside the API-only one)")
	flag.Float64Var(&o.rate, "rate", 4, "runbooks submitted per second")
	flag.DurationVar(&o.faultGap, "fault-gap", 6*time.Second, "mean pause between faults (each is drawn from half to one and a half of it)")
	flag.DurationVar(&o.settle, "settle", 3*time.Minute, "how long every runbook may take to finish once the faults stop")
	flag.StringVar(&o.out, "out", "bin/soak", "where a failing run's seed, figures and logs are kept (in a directory named after the seed)")
	maxRSS := flag.Int64("max-rss-mib", 512, "no rbd process may exceed this resident set size, in MiB")
	flag.BoolVar(&o.keepLogs, "keep", false, "keep the logs of a run without violations too")
	only := flag.String("faults", strings.Join(faultKinds, ","), "the kinds of fault to inject, comma-separated")
	flag.StringVar(&o.databaseURL, "database-url", "", "soak on this PostgreSQL (make cluster's multi-host URL) rather than on one rbsoak starts; the pg-restart and pg-pause faults need rbsoak's own")
	flag.StringVar(&o.failoverCmd, "failover-cmd", "", "the command that carries out the switchover and primary-kill9 faults, called with switchover or kill-primary (make soak-failover: cluster/cluster.sh)")
	flag.Parse()
	o.faults = strings.Split(*only, ",")
	for _, f := range o.faults {
		switch {
		case slices.Contains(failoverKinds, f):
			if o.failoverCmd == "" {
				fatalf("--faults: %s needs --failover-cmd", f)
			}
		case !slices.Contains(faultKinds, f):
			fatalf("--faults: unknown kind %q; the kinds are %s (and %s with --failover-cmd)", f, strings.Join(faultKinds, ","), strings.Join(failoverKinds, ","))
		case o.databaseURL != "" && (f == faultPGRestart || f == faultPGPause):
			fatalf("--faults: %s needs rbsoak's own PostgreSQL, not --database-url", f)
		}
	}
	o.maxRSS = *maxRSS << 20
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if o.workers < 1 || o.rate <= 0 || o.duration <= 0 {
		fatalf("--workers, --rate and --duration must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := soak(ctx, o)
	if err != nil {
		fatalf("%v", err)
	}
	rep.print(os.Stdout)
	if len(rep.Violations) > 0 {
		os.Exit(1)
	}
}

// soak runs one soak and returns its figures; an error means the soak
// itself could not run, not that rbd broke a promise.
func soak(ctx context.Context, o options) (*report, error) {
	if _, err := os.Stat(o.rbd); err != nil {
		return nil, fmt.Errorf("%v (make build makes it)", err)
	}
	rbd, err := filepath.Abs(o.rbd)
	if err != nil {
		return nil, err
	}
	o.rbd = rbd
	logf("seed %d, %s, %d workers, %.1f runbooks/s, a fault every %s or so", o.seed, o.duration, o.workers, o.rate, o.faultGap)
	dir, err := os.MkdirTemp("", "rbsoak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// PostgreSQL runs as the postgres user when rbsoak is root: it must
	// reach its cluster through this directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}

	notifyCtx, stopNotifying := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNotifying()
	c, err := startCluster(ctx, o, dir)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	n := newNotifier(notifyCtx, c.secret)
	svc, err := newService(o.seed, n)
	if err != nil {
		return nil, err
	}
	defer svc.close()
	verbsText := verbsFor(svc.url)
	verbsDir := filepath.Join(dir, "verbs")
	if err := os.MkdirAll(verbsDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(verbsDir, "soak.yaml"), []byte(verbsText), 0o644); err != nil {
		return nil, err
	}
	pc, err := newPlanCompiler(verbsText)
	if err != nil {
		return nil, err
	}
	if err := c.startDaemons(ctx, verbsDir); err != nil {
		return nil, err
	}
	for _, d := range c.workers {
		n.daemons = append(n.daemons, "http://"+d.addr+"/v1/notifications")
	}

	began := time.Now()
	drv := newDriver(c, pc, o.seed)
	inj := newInjector(c, svc, o.seed, o.faults)
	mem := &memory{}
	loadCtx, stopLoad := context.WithTimeout(ctx, o.duration)
	defer stopLoad()
	actCtx, stopActing := context.WithCancel(ctx)
	defer stopActing()
	done := make(chan struct{}, 4)
	go func() { drv.submitLoop(loadCtx, time.Duration(float64(time.Second)/o.rate)); done <- struct{}{} }()
	go func() { inj.run(loadCtx, o.faultGap); done <- struct{}{} }()
	go func() { drv.actLoop(actCtx); done <- struct{}{} }()
	go func() { mem.sample(actCtx, c, max(5*time.Second, o.duration/5)); done <- struct{}{} }()
	<-done
	<-done // the submissions and the faults have stopped; every fault is undone
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	logf("load over after %s: %d runbooks submitted; settling", time.Since(began).Round(time.Second), len(drv.all()))
	for _, w := range c.workers {
		if !w.running() {
			if err := c.start(ctx, w); err != nil {
				inj.failed("restarting %s to settle: %v", w.name, err)
			}
		}
	}
	n.wait() // every notification has its final answers
	running, settleErr := waitSettled(ctx, c.url, o.settle)
	stopActing()
	<-done
	<-done
	stopNotifying()

	st, err := load(ctx, c.url)
	if err != nil {
		return nil, fmt.Errorf("reading the end state: %w", err)
	}
	rep := newReport(o, time.Since(began), drv, st, svc, n, inj, c)
	if running > 0 {
		rep.violation("%d runbooks still running %s after the faults stopped (%v)", running, o.settle, settleErr)
	}
	for _, v := range violations(st, drv.all(), svc, n) {
		rep.violation("%s", v)
	}
	for _, v := range mem.violations(c, o.maxRSS) {
		rep.violation("%s", v)
	}
	for _, v := range inj.errors {
		rep.violation("fault not carried out or undone: %s", v)
	}
	c.mu.Lock()
	for _, v := range c.crashes {
		rep.violation("%s", v)
	}
	c.mu.Unlock()
	for _, v := range drv.problems {
		rep.violation("driver: %s", v)
	}
	for _, v := range logViolations(c.logDir) {
		rep.violation("%s", v)
	}
	rep.Memory = memoryFigures(mem, c)
	if len(rep.Violations) > 0 || o.keepLogs {
		if err := keep(o, rep, c, inj); err != nil {
			logf("keeping the logs: %v", err)
		}
	}
	return rep, nil
}

// keep copies the logs, the fault schedule and the figures to
// --out/seed-N, so a failing run can be studied and repeated.
func keep(o options, rep *report, c *cluster, inj *injector) error {
	dst := filepath.Join(o.out, fmt.Sprintf("seed-%d", o.seed))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(c.logDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(c.logDir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	inj.mu.Lock()
	faults := append([]string(nil), inj.log...)
	inj.mu.Unlock()
	fb, _ := json.MarshalIndent(faults, "", "  ")
	rb, _ := json.MarshalIndent(rep, "", "  ")
	rep.Kept = dst
	return errors.Join(
		os.WriteFile(filepath.Join(dst, "faults.json"), fb, 0o644),
		os.WriteFile(filepath.Join(dst, "report.json"), rb, 0o644),
		os.WriteFile(filepath.Join(dst, "command"), []byte(rep.Command+"\n"), 0o644),
	)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s rbsoak: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rbsoak: "+format+"\n", args...)
	os.Exit(2)
}
