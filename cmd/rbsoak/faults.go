package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// The kinds of fault, as the figures name them.
const (
	faultKill9       = "kill9"
	faultSIGTERM     = "sigterm"
	faultPGRestart   = "pg-restart"
	faultPGPause     = "pg-pause"
	faultTerminate   = "pg-terminate"
	faultService500  = "service-500"
	faultServiceHang = "service-hang"
)

var faultKinds = []string{faultKill9, faultSIGTERM, faultPGRestart, faultPGPause, faultTerminate, faultService500, faultServiceHang}

// The failover faults, on a cluster with an HA engine (--failover-cmd):
// a planned switchover, and the primary's loss (kill -9 of its PostgreSQL
// and of the engine's agent beside it) with its standby promoted.
const (
	faultSwitchover   = "switchover"
	faultPrimaryKill9 = "primary-kill9"
)

var failoverKinds = []string{faultSwitchover, faultPrimaryKill9}

// injector injects one fault at a time at random moments drawn from the
// seed. Faults are serial so that each one's recovery is its own: two at
// once would not tell which broke what. Every fault is undone before the
// next (a killed worker restarted, the server resumed).
type injector struct {
	c     *cluster
	svc   *service
	rng   *rand.Rand
	kinds []string // what may be injected

	mu     sync.Mutex
	counts map[string]int
	// recoveries is, for each failover, the time from the primary's loss
	// (the fault's start) to the first notification stored after it: the
	// first resume on the new primary.
	recoveries []time.Duration
	log        []string // what was done when, for the report of a failing run
	errors     []string // a fault that could not be carried out or undone
}

func newInjector(c *cluster, svc *service, seed uint64, kinds []string) *injector {
	return &injector{c: c, svc: svc, rng: rand.New(rand.NewPCG(seed, 0xfa17)), kinds: kinds, counts: map[string]int{}}
}

// run injects faults until ctx ends, a pause of gap (±50%) between them.
func (in *injector) run(ctx context.Context, gap time.Duration) {
	for {
		wait := gap/2 + time.Duration(in.rng.Int64N(int64(gap)))
		sleepCtx(ctx, wait)
		if ctx.Err() != nil {
			return
		}
		kind := in.kinds[in.rng.IntN(len(in.kinds))]
		err := in.inject(ctx, kind)
		in.mu.Lock()
		in.counts[kind]++
		in.mu.Unlock()
		if err != nil {
			in.failed("%s: %v", kind, err)
		}
	}
}

func (in *injector) inject(ctx context.Context, kind string) error {
	switch kind {
	case faultKill9:
		w := in.c.workers[in.rng.IntN(len(in.c.workers))]
		pause := time.Duration(200+in.rng.IntN(5000)) * time.Millisecond
		in.note("kill -9 %s, restart after %s", w.name, pause)
		if err := w.signal(syscall.SIGKILL, 10*time.Second); err != nil {
			return err
		}
		sleepCtx(ctx, pause)
		return in.c.start(context.WithoutCancel(ctx), w)
	case faultSIGTERM:
		w := in.c.workers[in.rng.IntN(len(in.c.workers))]
		in.note("SIGTERM %s", w.name)
		if err := w.signal(syscall.SIGTERM, 30*time.Second); err != nil {
			return err
		}
		sleepCtx(ctx, time.Duration(in.rng.IntN(2000))*time.Millisecond)
		return in.c.start(context.WithoutCancel(ctx), w)
	case faultPGRestart:
		in.note("postgres restart -m immediate")
		return in.c.pg.Restart(context.WithoutCancel(ctx))
	case faultPGPause:
		pause := time.Duration(1000+in.rng.IntN(5000)) * time.Millisecond
		in.note("postgres SIGSTOP for %s", pause)
		// The whole process group: the postmaster and every backend.
		pgid := in.c.pg.Pid()
		if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(pause) // not ctx: the server must always be resumed
		return syscall.Kill(-pgid, syscall.SIGCONT)
	case faultTerminate:
		n, err := in.terminateBackends(ctx)
		in.note("pg_terminate_backend: %d sessions", n)
		return err
	case faultSwitchover, faultPrimaryKill9:
		arg := "switchover"
		if kind == faultPrimaryKill9 {
			arg = "kill-primary"
		}
		in.note("%s %s", in.c.o.failoverCmd, arg)
		lost := time.Now()
		recovered := make(chan time.Duration, 1)
		go func() { recovered <- in.svc.notifier.firstAcceptAfter(lost, 5*time.Minute) }()
		out, err := exec.CommandContext(context.WithoutCancel(ctx), in.c.o.failoverCmd, arg).CombinedOutput()
		in.note("%s", strings.TrimSpace(string(out)))
		if err != nil {
			return fmt.Errorf("%s %s: %w", in.c.o.failoverCmd, arg, err)
		}
		took := <-recovered
		in.note("%s: first notification stored %s after the primary was lost", kind, took.Round(time.Millisecond))
		in.mu.Lock()
		in.recoveries = append(in.recoveries, took)
		in.mu.Unlock()
	case faultService500, faultServiceHang:
		mode, span := serviceErrors, time.Duration(1000+in.rng.IntN(5000))*time.Millisecond
		if kind == faultServiceHang {
			mode = serviceHangs
		}
		in.note("%s for %s", kind, span)
		in.svc.faultMode.Store(int32(mode))
		time.Sleep(span)
		in.svc.faultMode.Store(int32(serviceHealthy))
	}
	return nil
}

// terminateBackends ends a random half of the daemons' sessions.
func (in *injector) terminateBackends(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, in.c.url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND random() < 0.5`).Scan(&n)
	return n, err
}

func (in *injector) note(format string, args ...any) {
	line := time.Now().UTC().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...)
	logf("fault: %s", fmt.Sprintf(format, args...))
	in.mu.Lock()
	in.log = append(in.log, line)
	in.mu.Unlock()
}

func (in *injector) failed(format string, args ...any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.errors = append(in.errors, fmt.Sprintf(format, args...))
}

// summary is the count of each fault kind, in the order of faultKinds.
func (in *injector) summary() []fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]fault, 0, len(faultKinds))
	for _, k := range append(slices.Clone(faultKinds), failoverKinds...) {
		if slices.Contains(failoverKinds, k) && in.counts[k] == 0 {
			continue
		}
		out = append(out, fault{Kind: k, Count: in.counts[k]})
	}
	return out
}

// fault is one line of the figures.
type fault struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
}

// recoveryTimes are the failovers' recovery times, in the order they came.
func (in *injector) recoveryTimes() []time.Duration {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.recoveries)
}
