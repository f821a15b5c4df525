package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// resume measures resume latency: K runbooks park, then their
// notifications arrive through the webhook at a steady rate; the latency
// is from the moment the sender sends the webhook to the dependent step's
// STEP_STARTED in the ledger. (Before inline steps it was from the webhook's
// 202; since rbd resumes a runbook in the webhook's own transaction, the
// step starts before the 202, so the clock now starts at the send and
// includes the webhook's round trip.)
func (l *lab) resume(ctx context.Context, r *report) error {
	plan, err := compilePlan(parkSource)
	if err != nil {
		return err
	}
	figures := runs{}
	for run := range l.o.runs {
		if err := l.resumeRun(ctx, l.schema("rs"), plan, figures); err != nil {
			return err
		}
		logf("resume run %d: p50 %.2f ms, p99 %.2f ms", run+1, figures["p50"][run], figures["p99"][run])
	}
	label := fmt.Sprintf("resume at %d notifications/s (%d parked), ", l.o.rate, l.o.parkedCount)
	r.add(label+"p50", figures.median("p50"), "ms").atMost(3, "p50 ≤ 3 ms").note("%s", figures.spread("p50"))
	r.add(label+"p90", figures.median("p90"), "ms")
	r.add(label+"p95", figures.median("p95"), "ms").atMost(10, "p95 ≤ 10 ms (target)").note("%s", figures.spread("p95"))
	r.add(label+"p99", figures.median("p99"), "ms").atMost(15, "p99 ≤ 15 ms").note("%s", figures.spread("p99"))
	r.add(label+"max", figures.median("p100"), "ms")
	r.add("webhook sent → 202 during the resume run, p50", figures.median("webhook p50"), "ms")
	r.add("  notifications resumed in the webhook's transaction", figures.median("in place"), "%").
		note("the rest handed on to the advancers because the in-place places (one per advancer) were taken; %s", figures.spread("in place"))
	r.add("  rbd CPU per notification", figures.median("rbd cpu"), "µs").
		note("rbd's user + system time from the first notification sent to the last resumed step's end; rbload's own, sending: %.0f µs", figures.median("rbload cpu"))
	if len(figures["postgres cpu"]) > 0 {
		r.add("  PostgreSQL CPU per notification", figures.median("postgres cpu"), "µs").
			note("the CPU time of the backends serving rbd's engine pool over the same span, read from /proc (the server on this machine)")
	}
	if len(figures["pg cpu/runbook"]) > 0 {
		r.add("  PostgreSQL CPU per runbook, the whole resume run", figures.median("pg cpu/runbook"), "µs").
			note("submit, park, notify, resume, the step after; backends that exited, as DBOS's whole resume run is counted")
	}
	r.add("  database pool waits per notification", figures.median("pool waits"), "").
		note("rbd_db_acquire_waits_total over the run ÷ notifications; the worker's pool, waits of any of its transactions")
	l.rbdResumeP50, l.rbdResumeP99 = figures.median("p50"), figures.median("p99")
	return nil
}

// resumeRun starts an rbd on a schema, parks K runbooks there, notifies
// them at the rate, and adds the run's percentiles and the webhook's p50
// to figures. The schema is a fresh one or the history's (history.go).
func (l *lab) resumeRun(ctx context.Context, schema string, plan []byte, figures runs) error {
	var runbooks int
	// What the whole run cost PostgreSQL, submissions and parks included,
	// as DBOS's resume run is counted: its workflows start, wait and
	// resume in one process.
	_, pgCPU, err := l.counted(ctx, func() (err error) {
		runbooks, err = l.resumeRunIn(ctx, schema, plan, figures)
		return err
	})
	if err != nil {
		return err
	}
	if pgCPU > 0 {
		figures.add("pg cpu/runbook", float64(pgCPU.Microseconds())/float64(runbooks))
	}
	return nil
}

// resumeRunIn is resumeRun's run; it returns how many runbooks it
// submitted, and stops (or, failing, kills) the daemon it started.
func (l *lab) resumeRunIn(ctx context.Context, schema string, plan []byte, figures runs) (int, error) {
	d, err := l.startRBD(ctx, schema, nil)
	if err != nil {
		return 0, err
	}
	stopped := false
	defer func() {
		if !stopped { // a failed run leaves no rbd behind
			_ = d.kill()
		}
	}()
	ids, err := submitAll(ctx, d.client, plan, l.o.parkedCount, 8, batchTag("rs"))
	if err != nil {
		return 0, err
	}
	keys, err := parkedKeys(ctx, d.client, ids, 5*time.Minute)
	if err != nil {
		return 0, err
	}
	// A deployment's tables have statistics: autovacuum analyzes a table a
	// minute or so after it changes. A fresh schema measured at once has
	// none, and the plans made with default estimates read every parked
	// wait's index entry to find one runbook's.
	if err := l.stats.AnalyzeSchema(ctx, schema); err != nil {
		return 0, err
	}
	waitsBefore := counter(ctx, d.server, "rbd_db_acquire_waits_total")
	before, err := l.readCPU(ctx, d)
	if err != nil {
		return 0, err
	}
	sent, accepted, err := notifyAtRate(ctx, d.client, keys, l.o.rate)
	if err != nil {
		return 0, err
	}
	if err := waitNoneExecuting(ctx, d.client, 5*time.Minute); err != nil {
		return 0, err
	}
	after, err := l.readCPU(ctx, d)
	if err != nil {
		return 0, err
	}
	perNotification := func(used time.Duration) float64 { return float64(used.Microseconds()) / float64(len(keys)) }
	if used, ok := backendCPUSince(before.backends, after.backends); ok {
		figures.add("postgres cpu", perNotification(used))
	}
	figures.add("rbd cpu", perNotification(after.rbd-before.rbd))
	figures.add("rbload cpu", perNotification(after.self-before.self))
	latencies, err := resumeLatencies(ctx, d.client, ids, sent)
	if err != nil {
		return 0, err
	}
	// Where the resumes went, from the daemon's own counters: a resume
	// handed on waits for an advancer's batch; a pool wait, for a
	// connection.
	inPlace := counter(ctx, d.server, "rbd_resumes_in_place_total")
	waits := counter(ctx, d.server, "rbd_db_acquire_waits_total") - waitsBefore
	figures.add("in place", 100*inPlace/float64(len(keys)))
	figures.add("pool waits", waits/float64(len(keys)))
	webhook := make([]float64, len(sent))
	for i := range sent {
		webhook[i] = ms(accepted[i].Sub(sent[i]))
	}
	stopped = true
	if err := d.stop(); err != nil {
		return 0, err
	}
	figures.add("webhook p50", percentile(webhook, 50))
	for _, p := range []float64{50, 90, 95, 99, 100} {
		figures.add(fmt.Sprintf("p%g", p), percentile(latencies, p))
	}
	return len(ids), nil
}

// cpuReading is what the notifications cost is read from: the CPU time
// rbd, rbload and, when the server is on this machine, rbd's backends
// have used so far.
type cpuReading struct {
	rbd, self time.Duration
	backends  map[int]time.Duration
}

// readCPU reads d's, this process's and d's backends' CPU time.
func (l *lab) readCPU(ctx context.Context, d *daemon) (cpuReading, error) {
	var c cpuReading
	var err error
	if c.rbd, err = processCPU(d.cmd.Process.Pid); err != nil {
		return c, err
	}
	if c.self, err = processCPU(os.Getpid()); err != nil {
		return c, err
	}
	c.backends, err = l.backendCPU(ctx)
	return c, err
}

// notifyAtRate sends one completed notification per key, rate per
// second, each from its own goroutine so that a slow answer does not
// delay the next, and returns when each was sent and when accepted.
func notifyAtRate(ctx context.Context, c *client.Client, keys []string, rate int) (sent, accepted []time.Time, err error) {
	sent, accepted = make([]time.Time, len(keys)), make([]time.Time, len(keys))
	errs := make(chan error, len(keys))
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i, key := range keys {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-tick.C:
		}
		wg.Go(func() {
			sent[i] = time.Now()
			res, err := notifyRetrying(ctx, c, key)
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
		return nil, nil, err
	default:
		return sent, accepted, nil
	}
}

// notifyRetrying sends a completed notification, and sends it again after
// a 503, as docs/design/daemon.md asks of a sender: a daemon that is reading as many
// request bodies as it may says so rather than queueing without end. The
// latency measured from the first send includes the retries.
func notifyRetrying(ctx context.Context, c *client.Client, key string) (*apitype.NotificationResponse, error) {
	for tries := 1; ; tries++ {
		res, err := c.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: []byte(`{}`)})
		var apiErr *client.Error
		if tries < 50 && errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusServiceUnavailable {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		return res, err
	}
}

// resumeLatencies reads each runbook's ledger for its dependent step's
// STEP_STARTED, in milliseconds after the notification was sent.
func resumeLatencies(ctx context.Context, c *client.Client, ids []uuid.UUID, sent []time.Time) ([]float64, error) {
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
		out[i] = ms(started.At.Sub(sent[i]))
	}
	return out, nil
}
