package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// provider is a test service behind http.call: it answers each request
// with the next of its answers (the last one repeats), and records the
// engine's clock and the Idempotency-Key of every request.
type provider struct {
	mu      sync.Mutex
	clock   func() time.Time
	answers []answer
	seen    []request
}

type answer struct {
	status     int
	retryAfter string
}

type request struct {
	at  time.Time
	key string
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.answers[min(len(p.seen), len(p.answers)-1)]
	p.seen = append(p.seen, request{at: p.clock(), key: r.Header.Get("Idempotency-Key")})
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
	_, _ = fmt.Fprintf(w, `{"n": %d}`, len(p.seen))
}

func (p *provider) requests() []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]request(nil), p.seen...)
}

// retryBundle is an engine whose clock the test moves, starting an hour
// behind the database's, so that whatever the engine schedules is due for
// the database at once and the engine's clock alone decides when a retry
// runs; and a provider behind two verbs: one with the default retry table,
// one whose rate limit backs off from 100 ms, so that only a Retry-After
// can make it wait seconds.
func retryBundle(t *testing.T, answers ...answer) (*testBundle, *clock, *provider) {
	t.Helper()
	c := &clock{}
	c.freeze() // only advance moves it: a retry's wait is the engine's, not the load's
	c.advance(-time.Hour)
	b := setup(t, func(cfg *runtime.Config) { cfg.Clock = c.now; cfg.PollInterval = 20 * time.Millisecond })
	p := &provider{clock: c.now, answers: answers}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: call
  domain: p
  execution: {kind: sync, handler: http.call, params: {url: %[1]q}, side_effects: external_call}
- name: call-quickly
  domain: p
  execution:
    kind: sync
    handler: http.call
    params: {url: %[1]q}
    side_effects: external_call
    retry: {by_code: {RATE_LIMIT: {max_attempts: 5, base: PT0.1S, cap: PT2M}}}
`, srv.URL))
	b.run(t)
	return b, c, p
}

// waitRequests waits until the provider has seen n requests.
func waitRequests(t *testing.T, p *provider, n int) []request {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.requests()) >= n }, 20*time.Second, 10*time.Millisecond)
	return p.requests()
}

// docs/design/semantics.md section 12: a 429 with Retry-After: 2 waits two seconds of
// the engine's clock, though its own backoff is 100 ms; the third attempt
// succeeds, and every attempt carried the same idempotency key.
func TestA429IsRetriedAfterItsRetryAfter(t *testing.T) {
	b, c, p := retryBundle(t, answer{429, "2"}, answer{429, "2"}, answer{200, ""})
	id := b.submit(t, `(p.call-quickly :to "ada" :as @c)`, nil)

	for attempt := 1; attempt <= 2; attempt++ {
		seen := waitRequests(t, p, attempt)
		v := b.waitFor(t, id, "waiting to retry", func(v *apitype.RunbookView) bool {
			return step(v, "c").Status == rbtype.StepFailedRetryable && step(v, "c").Attempt == attempt
		})
		wait := step(v, "c").NextAttemptAt.Sub(seen[attempt-1].at)
		require.GreaterOrEqual(t, wait, 2*time.Second, "attempt %d: the Retry-After wins over the 100 ms backoff", attempt)
		require.Less(t, wait, 2100*time.Millisecond)

		// A second and a half later by the engine's clock it still waits.
		c.advance(1500 * time.Millisecond)
		time.Sleep(200 * time.Millisecond) // ten polls
		require.Len(t, p.requests(), attempt, "attempt %d: retried before its Retry-After", attempt)
		c.advance(600 * time.Millisecond)
	}
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, 3, step(v, "c").Attempt)
	seen := p.requests()
	require.Len(t, seen, 3)
	for i := 1; i < 3; i++ {
		require.GreaterOrEqual(t, seen[i].at.Sub(seen[i-1].at), 2*time.Second)
		require.Equal(t, seen[0].key, seen[i].key, "one idempotency key for every attempt")
	}
	require.NotEmpty(t, seen[0].key)

	events := b.events(t, id)
	var scheduled []machine.RetryScheduledData
	for _, e := range events {
		if e.Type == rbtype.EventStepRetryScheduled {
			scheduled = append(scheduled, decodeData[machine.RetryScheduledData](t, e.Data))
		}
	}
	require.Len(t, scheduled, 2)
	for _, d := range scheduled {
		require.Equal(t, rbtype.CodeRateLimit, d.Code)
		require.Equal(t, int64(2000), d.RetryAfterMS)
	}
}

// A 401 is AUTH_FORBIDDEN: final, never retried.
func TestA401IsNotRetried(t *testing.T) {
	b, _, p := retryBundle(t, answer{401, ""})
	id := b.submit(t, `(p.call :to "ada" :as @c)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, rbtype.CodeAuthForbidden, step(v, "c").Error.Code)
	require.Equal(t, 1, step(v, "c").Attempt)
	require.Len(t, p.requests(), 1)
}

// A 503 is TEMPORARY_PROVIDER_ERROR: the default table tries it three times, a second
// and then two apart by the engine's clock, then fails.
func TestA503IsRetriedThenFailsTempProvider(t *testing.T) {
	b, c, p := retryBundle(t, answer{503, ""})
	id := b.submit(t, `(p.call :to "ada" :as @c)`, nil)
	for n := 1; n < 3; n++ {
		waitRequests(t, p, n)
		b.waitFor(t, id, "waiting to retry", func(v *apitype.RunbookView) bool {
			return step(v, "c").Status == rbtype.StepFailedRetryable && step(v, "c").Attempt == n
		})
		c.advance(time.Minute)
	}
	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, rbtype.CodeTemporaryProviderError, step(v, "c").Error.Code)
	require.Equal(t, rbtype.CodeTemporaryProviderError, v.Error.Code)
	require.Equal(t, 3, step(v, "c").Attempt)
	seen := p.requests()
	require.Len(t, seen, 3)
	require.GreaterOrEqual(t, seen[1].at.Sub(seen[0].at), time.Second)
	require.GreaterOrEqual(t, seen[2].at.Sub(seen[1].at), 2*time.Second)
}

// events is a runbook's ledger.
func (b *testBundle) events(t *testing.T, id uuid.UUID) []driver.Event {
	t.Helper()
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	return events
}

// decodeData decodes an event's data.
func decodeData[T any](t *testing.T, data []byte) T {
	t.Helper()
	var out T
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}
