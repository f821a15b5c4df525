package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// probeSecret is the webhook secret of the daemons a prober probes: they
// are started with --webhook-secret-file holding it (probeSecretFile).
const probeSecret = "whsec-probe"

// probeGap is the time between two probes: often enough to see a stall
// of a second, seldom enough not to be a load of its own.
const probeGap = 300 * time.Millisecond

// probeSecretFile writes probeSecret where the daemon's
// --webhook-secret-file can read it.
func probeSecretFile(t *testing.T, e *daemonEnv) string {
	t.Helper()
	return e.file(t, "probe-secret", probeSecret+"\n")
}

// prober is another tenant's ordinary work, done while an attack runs, to
// show the attack does not hold it up (docs/reliability.md, "Under
// attack": another tenant's submit and a signed notification are
// answered within 2 s, and the daemon's memory stays under 1 GB). Every
// probeGap it submits a small runbook as globex (mcpAttackTokens) and
// sends a signed notification that completes one of globex's parked
// waits, recording the slowest answer of each. It runs in a goroutine
// of its own, so it records its errors for stop to fail on rather than
// failing the test from there.
type prober struct {
	d      *daemon
	globex *client.Client
	ids    []string // globex's parked runbooks, one resumed by each probe
	keys   []string // their correlation keys
	before int64    // the daemon's peak memory when the prober began
	quit   chan struct{}
	done   chan struct{}
	halted sync.Once

	mu                           sync.Mutex
	submits, notifies            int
	slowestSubmit, slowestNotify time.Duration
	errs                         []error
}

// probeFigures is what a prober saw, for the test's log and
// docs/reliability.md.
type probeFigures struct {
	Submits, Notifies            int
	SlowestSubmit, SlowestNotify time.Duration
	PeakRSS, Grew                int64  // the daemon's peak memory, and its growth while probed
	Load                         string // /proc/loadavg's 1, 5 and 15 minute averages as the probing ended
}

// String says the figures as docs/reliability.md quotes them.
func (f probeFigures) String() string {
	return fmt.Sprintf("%d submits (slowest %v), %d signed notifications (slowest %v); the daemon's peak memory %d MB, grown by %d MB while probed; load average %s",
		f.Submits, f.SlowestSubmit.Round(time.Millisecond), f.Notifies, f.SlowestNotify.Round(time.Millisecond), f.PeakRSS>>20, f.Grew>>20, f.Load)
}

// startProber parks waits of globex's runbooks (one per probe the test
// will ask for; a probe past them notifies a key nothing waits on, which
// the daemon keeps and answers as well) and begins probing. Call it
// before the attack begins, so that the parking is not timed under it.
// d must serve mcpAttackTokens and probeSecret.
func startProber(t *testing.T, d *daemon, waits int) *prober {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := &prober{d: d, globex: d.client("tok-globex"), quit: make(chan struct{}), done: make(chan struct{})}
	p.globex.WebhookSecret = []byte(probeSecret)
	for range waits {
		id, key := parkedKey(t, ctx, p.globex, `(t.wait :as @w)`)
		p.ids, p.keys = append(p.ids, id), append(p.keys, key)
	}
	p.before = peakRSS(t, d.cmd.Process.Pid)
	go p.run()
	t.Cleanup(p.halt) // a test that fails before stop leaves no prober behind
	return p
}

// run probes every probeGap until stopped.
func (p *prober) run() {
	defer close(p.done)
	for i := 0; ; i++ {
		select {
		case <-p.quit:
			return
		case <-time.After(probeGap):
		}
		p.probe(i)
	}
}

// probe submits once and notifies once, each under a timeout far past
// the bound, so that a stalled daemon is recorded, not waited on for
// ever.
func (p *prober) probe(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	_, err := p.globex.Submit(ctx, apitype.SubmitRequest{Source: `(t.echo :v "g" :as @g)`, IdempotencyKey: fmt.Sprintf("probe-submit-%d", i)})
	tookSubmit := time.Since(began)
	key := fmt.Sprintf("probe-kept-%d", i)
	if i < len(p.keys) {
		key = p.keys[i]
	}
	began = time.Now()
	_, nerr := p.globex.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted})
	tookNotify := time.Since(began)

	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("probe %d's submit: %w", i, err))
	} else {
		p.submits++
		p.slowestSubmit = max(p.slowestSubmit, tookSubmit)
	}
	if nerr != nil {
		p.errs = append(p.errs, fmt.Errorf("probe %d's signed notification: %w", i, nerr))
	} else {
		p.notifies++
		p.slowestNotify = max(p.slowestNotify, tookNotify)
	}
}

// await returns once n probes have been answered (the attack must go on
// until then), or fails after a minute.
func (p *prober) await(t *testing.T, n int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d probes", n), func() (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return min(p.submits, p.notifies)+len(p.errs) >= n, nil
	})
}

// halt ends the probing: call it before the attack ends, so that every
// probe counted ran under the attack. stop calls it too.
func (p *prober) halt() {
	p.halted.Do(func() { close(p.quit) })
	<-p.done
}

// stop ends the probing and holds it to the bounds: every probe
// answered, at least `least` probes of each kind, the slowest of each
// within 2 s, the daemon's peak memory under 1 GB, and every parked wait
// a probe notified resumed to its end. The daemon under test is this test
// binary (RBD_TEST_MAIN); built with the race detector, as make test
// builds it, it takes several times the time and memory of the daemon
// as deployed (docs/reliability.md, "the notified lists' memory"), so
// under it the bounds are five times as wide, as in
// TestNestedListsOfANotificationExpandOutsideTheWebhook: still far below
// a stall behind the attack or memory that grows without end.
func (p *prober) stop(t *testing.T, least int) probeFigures {
	t.Helper()
	p.halt()
	peak := peakRSS(t, p.d.cmd.Process.Pid)
	load, err := os.ReadFile("/proc/loadavg")
	require.NoError(t, err)
	p.mu.Lock()
	f := probeFigures{Submits: p.submits, Notifies: p.notifies, SlowestSubmit: p.slowestSubmit, SlowestNotify: p.slowestNotify,
		PeakRSS: peak, Grew: peak - p.before, Load: strings.Join(strings.Fields(string(load))[:3], " ")}
	errs := p.errs
	p.mu.Unlock()
	t.Logf("another tenant, probed during the attack: %v", f)
	require.Empty(t, errs, "another tenant's probes were refused or timed out")
	require.GreaterOrEqual(t, f.Submits, least, "too few submits during the attack")
	require.GreaterOrEqual(t, f.Notifies, least, "too few signed notifications during the attack")
	wait, memory := 2*time.Second, int64(1<<30)
	if raceDetector {
		wait, memory = 5*wait, 5*memory
	}
	require.Less(t, f.SlowestSubmit, wait, "another tenant's submission waited behind the attack")
	require.Less(t, f.SlowestNotify, wait, "another tenant's signed notification waited behind the attack")
	require.Less(t, f.PeakRSS, memory, "the daemon's peak memory was %d MB", f.PeakRSS>>20)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range p.ids[:min(f.Notifies, len(p.ids))] {
		v, err := p.globex.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rbtype.RunbookComplete, v.Status, "globex's wait %s, notified by a probe", id)
	}
	return f
}
