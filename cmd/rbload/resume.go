package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/runtime/httpapi"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// resume measures resume latency: K runbooks park, then their
// notifications arrive through the webhook at a steady rate; the latency
// is from the webhook's 202 (as the sender sees it) to the dependent
// step's STEP_STARTED in the ledger.
func (l *lab) resume(ctx context.Context, r *report) error {
	plan, err := compilePlan(parkSource)
	if err != nil {
		return err
	}
	figures := runs{}
	for run := range l.o.runs {
		d, err := l.startRBD(ctx, l.schema("rs"), nil)
		if err != nil {
			return err
		}
		ids, err := submitAll(ctx, d.client, plan, l.o.parkedCount, 8, "rs")
		if err != nil {
			return err
		}
		keys, err := parkedKeys(ctx, d.client, ids, 5*time.Minute)
		if err != nil {
			return err
		}
		accepted, err := notifyAtRate(ctx, d.client, keys, l.o.rate)
		if err != nil {
			return err
		}
		if err := waitNoneExecuting(ctx, d.client, 5*time.Minute); err != nil {
			return err
		}
		latencies, err := resumeLatencies(ctx, d.client, ids, accepted)
		if err != nil {
			return err
		}
		if err := d.stop(); err != nil {
			return err
		}
		for _, p := range []float64{50, 90, 99, 100} {
			figures.add(fmt.Sprintf("p%g", p), percentile(latencies, p))
		}
		logf("resume run %d: p50 %.2f ms, p99 %.2f ms", run+1, percentile(latencies, 50), percentile(latencies, 99))
	}
	label := fmt.Sprintf("resume at %d notifications/s (%d parked), ", l.o.rate, l.o.parkedCount)
	r.add(label+"p50", figures.median("p50"), "ms").atMost(3, "p50 ≤ 3 ms").note("%s", figures.spread("p50"))
	r.add(label+"p90", figures.median("p90"), "ms")
	r.add(label+"p99", figures.median("p99"), "ms").atMost(15, "p99 ≤ 15 ms").note("%s", figures.spread("p99"))
	r.add(label+"max", figures.median("p100"), "ms")
	l.rbdResumeP50 = figures.median("p50")
	return nil
}

// notifyAtRate sends one completed notification per key, rate per
// second, each from its own goroutine so that a slow answer does not
// delay the next, and returns when each was accepted.
func notifyAtRate(ctx context.Context, c *httpapi.Client, keys []string, rate int) ([]time.Time, error) {
	accepted := make([]time.Time, len(keys))
	errs := make(chan error, len(keys))
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i, key := range keys {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		wg.Go(func() {
			res, err := c.Notify(ctx, httpapi.NotificationRequest{CorrelationKey: key, Status: "completed", Result: []byte(`{}`)})
			accepted[i] = time.Now()
			if err == nil && res.Status != "accepted" {
				err = fmt.Errorf("notification %s was %s", key, res.Status)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
		return accepted, nil
	}
}

// resumeLatencies reads each runbook's ledger for its dependent step's
// STEP_STARTED, in milliseconds after the notification was accepted.
func resumeLatencies(ctx context.Context, c *httpapi.Client, ids []uuid.UUID, accepted []time.Time) ([]float64, error) {
	ledgers, err := eventsOf(ctx, c, ids)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(ids))
	for i, evs := range ledgers {
		started, ok := firstEvent(evs, rbtype.EventStepStarted, "next")
		if !ok {
			return nil, fmt.Errorf("runbook %s never started its step after the notification", ids[i])
		}
		out[i] = ms(started.At.Sub(accepted[i]))
	}
	return out, nil
}
