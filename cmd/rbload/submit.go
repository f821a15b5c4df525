package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

// compilePlan compiles a source against the bench verbs, once: the
// daemon is then sent the plan, so that the measurements time running
// runbooks, not compiling the same source a thousand times.
func compilePlan(src string) ([]byte, error) {
	defs, diags := verbs.Parse("b.yaml", []byte(benchVerbs))
	if diags.HasErrors() {
		return nil, diags
	}
	cat, diags := registry.New(defs, runtime.NewHandlers(builtin.Deps{}).Specs())
	if diags.HasErrors() {
		return nil, diags
	}
	plan, diags := compiler.CompileSource("bench.rbk", []byte(src), cat)
	if diags.HasErrors() {
		return nil, diags
	}
	return plan.JSON(), nil
}

func chainSource(steps int) string { return chainOf("b.noop", steps) }

// chainOf is steps calls of verb, each after the one before.
func chainOf(verb string, steps int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(%s :as @s1)\n", verb)
	for i := 2; i <= steps; i++ {
		fmt.Fprintf(&b, "(%s :after @s%d :as @s%d)\n", verb, i-1, i)
	}
	return b.String()
}

// fanSource is a root, steps-2 branches after it, and a join after them.
func fanSource(steps int) string {
	var b strings.Builder
	b.WriteString("(b.noop :as @root)\n")
	var leaves []string
	for i := 1; i <= steps-2; i++ {
		fmt.Fprintf(&b, "(b.noop :after @root :as @leaf%d)\n", i)
		leaves = append(leaves, "@leaf"+strconv.Itoa(i))
	}
	fmt.Fprintf(&b, "(b.noop :after [%s] :as @join)\n", strings.Join(leaves, " "))
	return b.String()
}

// parkSource parks, then runs one step: the resume measurements.
const parkSource = "(b.wait :as @w)\n(b.noop :after @w :as @next)\n"

// batchTag names one run's submissions, for their idempotency keys: a
// run on the history's schema must not dedupe into an earlier run's
// runbooks there (the same keys would return them, long finished).
func batchTag(what string) string { return what + "-" + uuid.NewString()[:8] }

// submitAll submits n runbooks of one plan with `workers` requests in
// flight; each has its own idempotency key, so none dedupes another.
func submitAll(ctx context.Context, c *client.Client, plan []byte, n, workers int, tag string) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, n)
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				sub, err := c.Submit(ctx, apitype.SubmitRequest{Plan: plan, IdempotencyKey: fmt.Sprintf("%s-%d", tag, i)})
				if err != nil {
					errs <- err
					return
				}
				ids[i] = sub.ID
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return ids, err
}

// waitNoneExecuting polls until no runbook is executing.
func waitNoneExecuting(ctx context.Context, c *client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		page, err := c.List(ctx, client.ListRequest{Status: rbtype.RunbookExecuting, Limit: 1})
		if err != nil {
			return err
		}
		if len(page.Runbooks) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("runbooks still executing after %s: %w", timeout, errTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// eventsOf fetches the ledgers of many runbooks, several at a time.
func eventsOf(ctx context.Context, c *client.Client, ids []uuid.UUID) ([][]apitype.Event, error) {
	out := make([][]apitype.Event, len(ids))
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			evs, err := c.Events(ctx, id.String(), 0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out[i] = evs
		})
	}
	wg.Wait()
	return out, first
}

// firstEvent finds the first event of a type (and step, if given).
func firstEvent(evs []apitype.Event, typ rbtype.EventType, step string) (apitype.Event, bool) {
	for _, e := range evs {
		if e.Type == typ && (step == "" || e.Step == step) {
			return e, true
		}
	}
	return apitype.Event{}, false
}

// parkedKeys waits until each runbook's first step has parked and returns
// the correlation keys, in the order of ids.
func parkedKeys(ctx context.Context, c *client.Client, ids []uuid.UUID, timeout time.Duration) ([]string, error) {
	keys := make([]string, len(ids))
	deadline := time.Now().Add(timeout)
	for i, id := range ids {
		for keys[i] == "" {
			v, err := c.Get(ctx, id.String())
			if err != nil {
				return nil, err
			}
			for _, b := range v.BlockedOn {
				if b.Reason == apitype.BlockedAwaitingNotification {
					keys[i] = b.CorrelationKey
				}
			}
			if keys[i] != "" {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("runbook %s never parked: %w", id, errTimeout)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return keys, nil
}

// counter is metric for a counter that may not have been exported yet
// (a labelled series appears once it is first counted): 0 then.
func counter(ctx context.Context, server, name string) float64 {
	v, err := metric(ctx, server, name)
	if err != nil {
		return 0
	}
	return v
}

// metric reads one sample of a Prometheus text exposition: the series
// whose line starts with name (labels included).
func metric(ctx context.Context, server, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, fmt.Errorf("no metric %s", name)
}
