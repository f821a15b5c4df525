package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// parkedScale parks a large number of runbooks (100k by default) and
// measures the daemon that holds them: its resident memory, how long the
// timeout and inbox sweeps take, how long a restart takes to become
// ready, and how long one notification takes to resume its runbook among
// them. It runs once: parking 100k runbooks is most of make bench's time.
func (l *lab) parkedScale(ctx context.Context, r *report) error {
	plan, err := compilePlan(parkSource)
	if err != nil {
		return err
	}
	schema := l.schema("pk")
	front, err := l.startRBD(ctx, schema, profileEnv(l.profileBeside("submit")), "--worker=false")
	if err != nil {
		return err
	}
	defer front.stop()
	began := time.Now()
	ids, err := submitAll(ctx, front.client, plan, l.o.scale, 16, "pk")
	if err != nil {
		return err
	}
	submitted := time.Since(began)
	logf("parked scale: submitted %d runbooks in %s", l.o.scale, submitted.Round(time.Millisecond))
	r.add(fmt.Sprintf("parked scale: submissions over HTTP (%d)", l.o.scale), float64(l.o.scale)/submitted.Seconds(), "runbooks/s").
		note("16 clients, plans, an API-only rbd")

	// The sweep interval is shortened so that enough sweeps run in the
	// measuring window; each sweep's duration does not depend on it.
	worker, err := l.startRBD(ctx, schema, profileEnv(l.profileBeside("park")), "--sweep-interval", "1s")
	if err != nil {
		return err
	}
	began = time.Now()
	if err := waitMetric(ctx, worker.server, "rbd_parked_invocations", float64(l.o.scale), 10*time.Minute); err != nil {
		return err
	}
	parkedIn := time.Since(began)
	logf("parked scale: %d runbooks parked in %s", l.o.scale, parkedIn.Round(time.Second))
	r.add(fmt.Sprintf("parked scale: parking %d runbooks", l.o.scale), float64(l.o.scale)/parkedIn.Seconds(), "runbooks/s").
		note("each a start and a park transaction; measured to within one sweep (1 s)")

	// The sweeps' durations, over ten sweeps of the full set.
	sweepBefore, err := sweepTotals(ctx, worker.server)
	if err != nil {
		return err
	}
	time.Sleep(10500 * time.Millisecond)
	sweepAfter, err := sweepTotals(ctx, worker.server)
	if err != nil {
		return err
	}
	for _, name := range []string{"timeouts", "inbox"} {
		n := sweepAfter[name+"_count"] - sweepBefore[name+"_count"]
		if n <= 0 {
			return fmt.Errorf("no %s sweep ran in ten seconds", name)
		}
		mean := (sweepAfter[name+"_sum"] - sweepBefore[name+"_sum"]) / n * 1000
		r.add(fmt.Sprintf("parked scale: %s sweep among %d parked", name, l.o.scale), mean, "ms").note("mean of %.0f sweeps", n)
	}
	rss, err := worker.rss()
	if err != nil {
		return err
	}
	r.add(fmt.Sprintf("parked scale: rbd RSS with %d parked", l.o.scale), float64(rss)/(1<<20), "MiB").atMost(100, "≤ 100 MB")

	// One notification at a time, among them all.
	one, err := resumeOneByOne(ctx, front, worker, ids[:20])
	if err != nil {
		return err
	}
	r.add(fmt.Sprintf("parked scale: resuming one runbook among %d, median", l.o.scale), median(one), "ms").
		note("webhook sent → STEP_STARTED, 20 notifications one at a time; max %s ms", format(percentile(one, 100)))

	// Restart: SIGTERM, then a new process until /readyz answers 200.
	if err := worker.stop(); err != nil {
		return err
	}
	restarted := time.Now()
	again, err := l.startRBD(ctx, schema, nil)
	if err != nil {
		return err
	}
	ready := time.Since(restarted)
	r.add(fmt.Sprintf("parked scale: restart to ready with %d parked", l.o.scale), ms(ready), "ms").atMost(2000, "≤ 2 s").
		note("process start to /readyz 200")
	rss, err = again.rss()
	if err != nil {
		return err
	}
	r.add("parked scale: rbd RSS after the restart", float64(rss)/(1<<20), "MiB")
	return again.stop()
}

// waitMetric polls a daemon's metric until it reaches want.
func waitMetric(ctx context.Context, server, name string, want float64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for {
		v, err := metric(ctx, server, name)
		if err == nil && v >= want {
			return nil
		}
		if time.Since(last) > 15*time.Second {
			logf("waiting: %s is %.0f of %.0f", name, v, want)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s reached %.0f, not %.0f, in %s: %w", name, v, want, timeout, errTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// sweepTotals reads the sweep duration histograms' sums and counts.
func sweepTotals(ctx context.Context, server string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, name := range []string{"timeouts", "inbox"} {
		for _, part := range []string{"sum", "count"} {
			v, err := metric(ctx, server, fmt.Sprintf(`rbd_sweep_duration_seconds_%s{sweep="%s"}`, part, name))
			if err != nil {
				return nil, err
			}
			out[name+"_"+part] = v
		}
	}
	return out, nil
}

// resumeOneByOne notifies runbooks one at a time, each after the last has
// resumed, and returns the latencies in milliseconds.
func resumeOneByOne(ctx context.Context, front, worker *daemon, ids []uuid.UUID) ([]float64, error) {
	keys, err := parkedKeys(ctx, front.client, ids, time.Minute)
	if err != nil {
		return nil, err
	}
	var out []float64
	for i, key := range keys {
		sent, _, err := notifyAtRate(ctx, worker.client, []string{key}, 1000)
		if err != nil {
			return nil, err
		}
		deadline := time.Now().Add(time.Minute)
		for {
			evs, err := front.client.Events(ctx, ids[i].String(), 0)
			if err != nil {
				return nil, err
			}
			if started, ok := firstEvent(evs, rbtype.EventStepStarted, "next"); ok {
				out = append(out, ms(started.At.Sub(sent[0])))
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("runbook %s did not resume: %w", ids[i], errTimeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return out, nil
}
