package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// submitted is a runbook the driver started, and what it must become.
type submitted struct {
	id   uuid.UUID
	kind *kind
	run  string
	// cancelAt is when the driver cancels it (cancel kind only).
	cancelAt time.Time
	settled  atomic.Bool // approved or cancelled: the driver's part is done
}

// driver submits the mix at a steady rate and plays the people: it
// approves gates and cancels the runbooks meant to be cancelled. Every
// request is retried through faults (a daemon killed, the database down)
// with the same idempotency key, as a careful client would.
type driver struct {
	c        *cluster
	plans    map[string][]byte // by source
	compiler *planCompiler
	rng      *rand.Rand
	clients  []*client.Client // one per daemon; index 0 is the API daemon

	mu       sync.Mutex
	runbooks []*submitted
	problems []string

	submitRetries atomic.Int64
	approvals     atomic.Int64
	cancels       atomic.Int64
}

func newDriver(c *cluster, pc *planCompiler, seed uint64) *driver {
	d := &driver{c: c, compiler: pc, plans: map[string][]byte{}, rng: rand.New(rand.NewPCG(seed, 0xd41e))}
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, dm := range append([]*daemon{c.api}, c.workers...) {
		// The driver retries and counts refusals itself.
		d.clients = append(d.clients, &client.Client{BaseURL: "http://" + dm.addr, Token: c.token, HTTPClient: hc, RetryPolicy: &client.NoRetry})
	}
	return d
}

// submitLoop submits one runbook every interval until ctx ends.
func (d *driver) submitLoop(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		k := pickKind(d.rng)
		src := k.source(d.rng)
		plan, ok := d.plans[src]
		if !ok {
			var err error
			if plan, err = d.compiler.compile(src); err != nil {
				d.problem("compiling a %s runbook: %v", k.name, err)
				return
			}
			d.plans[src] = plan
		}
		sb := &submitted{kind: k, run: fmt.Sprintf("r%d", n)}
		if k.name == "cancel" || k.race {
			sb.cancelAt = time.Now().Add(time.Duration(d.rng.IntN(4000)) * time.Millisecond)
		}
		cl := d.clients[d.rng.IntN(len(d.clients))]
		wg.Go(func() { d.submit(ctx, cl, sb, plan) })
	}
}

// submit sends one runbook, retrying with the same Idempotency-Key until
// the daemon answers; a retry after a lost answer must find the runbook
// the first attempt made, not make another (the checks count them).
func (d *driver) submit(ctx context.Context, cl *client.Client, sb *submitted, plan []byte) {
	req := apitype.SubmitRequest{Plan: plan, Inputs: map[string]any{"run": sb.run}, Actor: "rbsoak", IdempotencyKey: "soak-" + sb.run}
	for attempt := 0; ; attempt++ {
		res, err := cl.Submit(ctx, req)
		if err == nil {
			sb.id = res.ID
			d.mu.Lock()
			d.runbooks = append(d.runbooks, sb)
			d.mu.Unlock()
			return
		}
		if !retryable(err) || ctx.Err() != nil {
			if ctx.Err() == nil {
				d.problem("submitting %s: %v", sb.run, err)
			}
			return
		}
		d.submitRetries.Add(1)
		// Another daemon may be up while this one restarts.
		cl = d.clients[int(attempt+1)%len(d.clients)]
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// actLoop approves gates and cancels, until ctx ends.
func (d *driver) actLoop(ctx context.Context) {
	for ctx.Err() == nil {
		d.mu.Lock()
		pending := make([]*submitted, 0, len(d.runbooks))
		for _, sb := range d.runbooks {
			if !sb.settled.Load() && (sb.kind.name == "gate" || sb.kind.name == "cancel" || sb.kind.race) {
				pending = append(pending, sb)
			}
		}
		d.mu.Unlock()
		for _, sb := range pending {
			if ctx.Err() != nil {
				return
			}
			d.act(ctx, sb)
		}
		sleepCtx(ctx, 300*time.Millisecond)
	}
}

// act does the driver's part for one runbook, if it is time.
func (d *driver) act(ctx context.Context, sb *submitted) {
	cl := d.clients[0]
	switch {
	case sb.kind.name == "cancel" || sb.kind.race:
		if time.Now().Before(sb.cancelAt) {
			return
		}
		res, err := cl.Cancel(ctx, sb.id.String(), apitype.CancelRequest{By: "rbsoak"})
		switch {
		case err == nil && res.Status == rbtype.RunbookCancelled:
			d.cancels.Add(1)
			sb.settled.Store(true)
		case sb.kind.race && isConflict(err):
			// It finished first: the race went the other way.
			sb.settled.Store(true)
		case err != nil && !retryable(err) && ctx.Err() == nil:
			d.problem("cancelling %s (%s): %v", sb.run, sb.id, err)
			sb.settled.Store(true)
		}
	case sb.kind.name == "gate":
		view, err := cl.Get(ctx, sb.id.String())
		if err != nil || view.State != "awaiting_approval" {
			return // not yet, or a fault: the next round asks again
		}
		_, err = cl.Approve(ctx, sb.id.String(), "ok", apitype.DecisionRequest{By: "rbsoak", Comment: "soak"})
		switch {
		case err == nil:
			d.approvals.Add(1)
			sb.settled.Store(true)
		case isConflict(err):
			// Approved already, by an attempt whose answer was lost.
			sb.settled.Store(true)
		case !retryable(err) && ctx.Err() == nil:
			d.problem("approving %s (%s): %v", sb.run, sb.id, err)
			sb.settled.Store(true)
		}
	}
}

// all is every runbook submitted so far.
func (d *driver) all() []*submitted {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*submitted(nil), d.runbooks...)
}

func (d *driver) problem(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

// retryable says whether a client may send the request again: the daemon
// unreachable, or answering 503.
func retryable(err error) bool {
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode == http.StatusServiceUnavailable
	}
	return true // no answer at all: a transport error
}

func isConflict(err error) bool {
	var apiErr *client.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusConflict
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
