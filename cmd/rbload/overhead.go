package main

import (
	"context"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// overheadRunbooks is how many chains of ten the overhead measurement
// runs, one at a time: light load.
const overheadRunbooks = 30

// overhead measures what the engine adds to a no-op step under light
// load, from the ledger's timestamps (taken when each event is written):
//
//   - submitted → first started: RUNBOOK_SUBMITTED to the first
//     STEP_STARTED: the wake-up path (NOTIFY, claim, advance transaction);
//   - ready → started: a step became ready when the step before it was
//     recorded (its STEP_SUCCEEDED, or the step's own STEP_READY if that
//     came first); to its STEP_STARTED;
//   - started → recorded: STEP_STARTED to STEP_SUCCEEDED: the start
//     transaction's commit, the call, and the recording transaction.
func (l *lab) overhead(ctx context.Context, r *report) error {
	plan, err := compilePlan(chainSource(10))
	if err != nil {
		return err
	}
	figures := runs{}
	for run := range l.o.runs {
		d, err := l.startRBD(ctx, l.schema("oh"), nil)
		if err != nil {
			return err
		}
		var wake, ready, recorded []float64
		for i := range overheadRunbooks {
			ids, err := submitAll(ctx, d.client, plan, 1, 1, fmt.Sprintf("oh-%d", i))
			if err != nil {
				return err
			}
			if err := waitNoneExecuting(ctx, d.client, time.Minute); err != nil {
				return err
			}
			evs, err := d.client.Events(ctx, ids[0].String(), 0)
			if err != nil {
				return err
			}
			w, rd, rc := stepOverheads(evs)
			wake, ready, recorded = append(wake, w...), append(ready, rd...), append(recorded, rc...)
		}
		if err := d.stop(); err != nil {
			return err
		}
		for name, samples := range map[string][]float64{"wake": wake, "ready": ready, "recorded": recorded} {
			figures.add(name+" p50", percentile(samples, 50))
			figures.add(name+" p95", percentile(samples, 95))
			figures.add(name+" max", percentile(samples, 100))
		}
		logf("overhead run %d: ready→started p95 %.3f ms, started→recorded p50 %.2f ms", run+1, percentile(ready, 95), percentile(recorded, 50))
	}
	r.add("ready → started, no-op steps, light load, p95", figures.median("ready p95"), "ms").atMost(5, "p95 ≤ 5 ms").
		note("p50 %s ms, max %s ms; the next step starts in the transaction that records the one before", format(figures.median("ready p50")), format(figures.median("ready max")))
	r.add("submitted → first step started, p95", figures.median("wake p95"), "ms").
		note("p50 %s ms, max %s ms: NOTIFY, claim, advance", format(figures.median("wake p50")), format(figures.median("wake max")))
	r.add("started → recorded, no-op step, p50", figures.median("recorded p50"), "ms").
		note("p95 %s ms, max %s ms: two commits and the call", format(figures.median("recorded p95")), format(figures.median("recorded max")))
	return nil
}

// stepOverheads reads one runbook's ledger.
func stepOverheads(evs []apitype.Event) (wake, ready, recorded []float64) {
	var submitted time.Time
	readyAt := map[string]time.Time{}
	startedAt := map[string]time.Time{}
	var previous string // the chain's steps run in order
	for _, e := range evs {
		switch e.Type {
		case rbtype.EventRunbookSubmitted:
			submitted = e.At
		case rbtype.EventStepReady:
			// A chain step became ready when the one before it was
			// recorded, which may precede its STEP_READY: keep the earlier.
			if _, ok := readyAt[e.Step]; !ok {
				readyAt[e.Step] = e.At
			}
		case rbtype.EventStepStarted:
			startedAt[e.Step] = e.At
			if previous == "" {
				wake = append(wake, ms(e.At.Sub(submitted)))
			} else if at, ok := readyAt[e.Step]; ok {
				ready = append(ready, ms(e.At.Sub(at)))
			}
		case rbtype.EventStepSucceeded:
			recorded = append(recorded, ms(e.At.Sub(startedAt[e.Step])))
			previous = e.Step
			readyAt[nextInChain(e.Step)] = e.At
		}
	}
	return wake, ready, recorded
}

// nextInChain names the step after sN in chainSource.
func nextInChain(step string) string {
	var n int
	if _, err := fmt.Sscanf(step, "s%d", &n); err != nil {
		return ""
	}
	return fmt.Sprintf("s%d", n+1)
}
