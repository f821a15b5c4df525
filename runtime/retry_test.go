package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// effects is a test service that fails its first requests, then records
// each effect by the Idempotency-Key it came with, as a provider that
// dedupes on it would: a repeat of a key that took effect does not take
// effect again.
type effects struct {
	mu       sync.Mutex
	failures int            // requests still to fail with 503
	byKey    map[string]int // effects taken, by key
	requests int
}

func (s *effects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.failures > 0 {
		s.failures--
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if s.byKey[key] == 0 {
		s.byKey[key]++
	}
	fmt.Fprintf(w, `{"sent":true,"key":%q}`, key)
}

// A runbook whose http.call fails until its attempts are used up fails;
// the provider recovers; retry completes it, and the provider saw the
// effect of the step's one idempotency key once.
func TestRetryCompletesAfterTheProviderRecovers(t *testing.T) {
	b := setup(t)
	svc := &effects{failures: 2, byKey: map[string]int{}}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: post
  domain: t
  execution:
    kind: sync
    handler: http.call
    params: {url: %q, method: POST}
    side_effects: external_call
    retry: {max_attempts: 2, backoff: fixed, base_delay: PT0.05S, max_delay: PT0.05S}
`, srv.URL))
	b.run(t)
	id := b.submit(t, `(t.echo :v 1 :as @first) (t.post :n @first.v :as @send) (t.echo :after @send :as @after)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, rbtype.StepFailed, step(v, "send").Status)
	require.Equal(t, 2, step(v, "send").Attempt)
	require.Equal(t, rbtype.StepSkipped, step(v, "after").Status)
	require.Empty(t, svc.byKey, "both attempts failed: no effect")

	_, err := b.engine.Retry(b.ctx, mustID(id), machine.RetryOptions{By: "test"})
	require.NoError(t, err)
	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, 3, step(v, "send").Attempt, "attempts continue from where they were")
	require.Equal(t, rbtype.StepComplete, step(v, "after").Status)
	require.Len(t, svc.byKey, 1, "every attempt used the step's one key")
	for key, n := range svc.byKey {
		require.Equal(t, 1, n, "key %s took effect once", key)
	}
	require.Equal(t, 3, svc.requests)
	require.Contains(t, b.eventTypes(t, id), "RUNBOOK_RETRIED")

	_, err = b.engine.Retry(b.ctx, mustID(id), machine.RetryOptions{By: "test"})
	require.ErrorIs(t, err, rbtype.ErrConflict, "a complete runbook is not retried")
}

// A runbook submitted held open stays in_progress after its steps finish,
// accepts an extension, and completes after Close.
func TestHeldOpenRunbookCompletesAfterClose(t *testing.T) {
	b := setup(t)
	b.run(t)
	sub, err := b.engine.SubmitSource(b.ctx, "open.rbk", []byte(`(t.echo :v 1 :as @a)`), runtime.Submission{Actor: "agent", HoldOpen: true})
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookInProgress, sub.Status)
	// The transaction that recorded a's result is the one that would have
	// settled the runbook: once a is complete, the decision was made.
	v := b.waitFor(t, sub.ID, "a complete", func(v *apitype.RunbookView) bool { return step(v, "a").Status == rbtype.StepComplete })
	require.Equal(t, rbtype.RunbookInProgress, v.Status)
	require.Nil(t, v.FinishedAt)

	ext, err := b.engine.Extend(b.ctx, sub.ID, runtime.Extension{Filename: "more.rbk", Source: []byte(`(t.echo :v @a.v :as @b)`), Actor: "agent"})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, ext.Steps)
	b.waitFor(t, sub.ID, "b complete", func(v *apitype.RunbookView) bool { return step(v, "b").Status == rbtype.StepComplete })

	require.NoError(t, b.engine.Close(b.ctx, sub.ID, "agent"))
	v = b.waitStatus(t, sub.ID, rbtype.RunbookComplete)
	require.NotNil(t, v.FinishedAt)
	require.ErrorIs(t, b.engine.Close(b.ctx, sub.ID, "agent"), rbtype.ErrConflict)
	types := b.eventTypes(t, sub.ID)
	require.Contains(t, types, "RUNBOOK_CLOSED")
	require.Equal(t, "RUNBOOK_COMPLETED", types[len(types)-1])

	// Held open is another request than the same source not held open.
	plain, err := b.engine.SubmitSource(b.ctx, "open.rbk", []byte(`(t.echo :v 1 :as @a)`), runtime.Submission{Actor: "agent"})
	require.NoError(t, err)
	require.NotEqual(t, sub.ID, plain.ID)
}

// A heartbeat extends a park's timeout; one past max_park is clamped at
// parked_at + max_park, and the step times out then.
func TestHeartbeatExtendsThenClampsAndTheStepTimesOut(t *testing.T) {
	b := setup(t)
	b.extendCatalogue(t, `
- name: wait-long
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT5S, max_park: PT6S}
`)
	b.run(t)
	id := b.submit(t, `(t.wait-long :as @w)`, nil)
	key := step(b.waitState(t, id, "parked"), "w").CorrelationKey
	inv, err := b.store.Invocation(b.ctx, key)
	require.NoError(t, err)

	at, err := b.engine.Heartbeat(b.ctx, key, "PT5.5S")
	require.NoError(t, err)
	require.True(t, at.After(inv.TimeoutAt), "the heartbeat moved the timeout forward")
	at, err = b.engine.Heartbeat(b.ctx, key, "P1D")
	require.NoError(t, err)
	limit := inv.ParkedAt.Add(6 * time.Second)
	require.WithinDuration(t, limit, at, time.Millisecond, "clamped at parked_at + max_park")
	got, err := b.store.Invocation(b.ctx, key)
	require.NoError(t, err)
	require.WithinDuration(t, limit, got.TimeoutAt, time.Millisecond)

	_, err = b.engine.Heartbeat(b.ctx, key, "soon")
	require.ErrorIs(t, err, rbtype.ErrInvalid)
	_, err = b.engine.Heartbeat(b.ctx, "no-such-key", "PT1S")
	require.ErrorIs(t, err, rbtype.ErrNotFound)

	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, rbtype.CodeParkTimeout, step(v, "w").Error.Code)
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	var beats int
	for _, e := range events {
		switch e.Type {
		case rbtype.EventStepHeartbeat:
			beats++
		case rbtype.EventStepTimedOut:
			var d machine.StepTimedOutData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			require.WithinDuration(t, limit, d.TimeoutAt, time.Millisecond, "it timed out at the clamped time")
		}
	}
	require.Equal(t, 2, beats)
	_, err = b.engine.Heartbeat(b.ctx, key, "PT1S")
	require.ErrorIs(t, err, rbtype.ErrConflict, "an ended wait takes no heartbeat")
}

// An escalated step resolved with retry parks again, under a new attempt
// and a new correlation key; resolved then with complete, its dependents
// run and the runbook completes.
func TestResolveRetryParksAgainThenCompleteRunsDependents(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait-escalate :as @w) (t.echo :after @w :as @n)`, nil)
	b.waitStatus(t, id, rbtype.RunbookEscalated)

	require.NoError(t, b.engine.Resolve(b.ctx, mustID(id), "w", machine.Resolution{Action: machine.ResolveRetry, By: "ops"}))
	// It parks again and, its park timeout being short, escalates again:
	// waiting for that is what the test can do without racing the park.
	v := b.waitFor(t, id, "escalated again", func(v *apitype.RunbookView) bool {
		return v.Status == rbtype.RunbookEscalated && step(v, "w").Attempt == 2
	})
	invs, err := b.store.InvocationsOf(b.ctx, mustID(id))
	require.NoError(t, err)
	require.Len(t, invs, 2, "parked again")
	require.Equal(t, []int{1, 2}, []int{invs[0].Attempt, invs[1].Attempt})
	require.NotEqual(t, invs[0].CorrelationKey, invs[1].CorrelationKey, "a new attempt, a new key")
	require.Equal(t, rbtype.StepSkipped, step(v, "n").Status)

	require.NoError(t, b.engine.Resolve(b.ctx, mustID(id), "w", machine.Resolution{Action: machine.ResolveComplete,
		Result: json.RawMessage(`{"answer":"by hand"}`), By: "ops"}))
	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, rbtype.StepComplete, step(v, "n").Status)
	require.Contains(t, b.eventTypes(t, id), "STEP_RESOLVED w")
}

// Cancelling a runbook asks the outside world to stop a parked
// http.start's work at its cancel_url, with the correlation key, and
// records the answer; a refusal is recorded too, and the runbook is
// cancelled either way.
func TestCancelAsksTheOutsideWorldToStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		event  rbtype.EventType
	}{
		{"sent", http.StatusOK, rbtype.EventInvocationCancelSent},
		{"refused", http.StatusConflict, rbtype.EventInvocationCancelFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			var mu sync.Mutex
			var cancels []map[string]any
			var keys []string
			start := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, `{"id":"job-7"}`)
			}))
			t.Cleanup(start.Close)
			stop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body map[string]any
				_ = json.NewDecoder(r.Body).Decode(&body)
				mu.Lock()
				cancels, keys = append(cancels, body), append(keys, r.Header.Get("Idempotency-Key"))
				mu.Unlock()
				w.WriteHeader(tc.status)
				fmt.Fprint(w, `{}`)
			}))
			t.Cleanup(stop.Close)
			b.extendCatalogue(t, fmt.Sprintf(`
- name: job
  domain: t
  execution:
    kind: durable
    handler: http.start
    params: {url: %q, cancel_url: %q}
    side_effects: external_call
    timeouts: {park_timeout: PT1H}
`, start.URL, stop.URL))
			b.run(t)
			id := b.submit(t, `(t.job :as @j)`, nil)
			key := step(b.waitState(t, id, "parked"), "j").CorrelationKey
			require.NoError(t, b.engine.Cancel(b.ctx, mustID(id), "ops"))

			mu.Lock()
			require.Len(t, cancels, 1)
			require.Equal(t, key, cancels[0]["correlation_key"])
			require.Equal(t, "job-7", cancels[0]["external_id"])
			require.Equal(t, []string{key}, keys, "the correlation key is the request's Idempotency-Key")
			mu.Unlock()
			v, err := b.engine.Get(b.ctx, mustID(id))
			require.NoError(t, err)
			require.Equal(t, rbtype.RunbookCancelled, v.Status)
			events, err := b.engine.Events(b.ctx, mustID(id), 0, 0)
			require.NoError(t, err)
			last := events[len(events)-1]
			require.Equal(t, tc.event, last.Type)
			require.Equal(t, "j", last.StepKey)
			var d machine.InvocationCancelData
			require.NoError(t, json.Unmarshal(last.Data, &d))
			require.Equal(t, key, d.CorrelationKey)
		})
	}
}

// An abort stops outside work as a cancel does: a failure under
// on_failure: abort cancels a parked http.start and asks its cancel_url to
// stop, with the correlation key, and records the answer.
func TestAbortAsksTheOutsideWorldToStop(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	var cancels []map[string]any
	start := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"job-9"}`)
	}))
	t.Cleanup(start.Close)
	stop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		cancels = append(cancels, body)
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(stop.Close)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: job
  domain: t
  execution:
    kind: durable
    handler: http.start
    params: {url: %q, cancel_url: %q}
    side_effects: external_call
    timeouts: {park_timeout: PT1H}
`, start.URL, stop.URL))
	b.run(t)
	id := b.submit(t, `(t.job :as @j) (t.approve :x 1 :as @g)`, nil)
	v := b.waitFor(t, id, "j parked, g at its gate", func(v *apitype.RunbookView) bool {
		return step(v, "j").Status == rbtype.StepParked && step(v, "g").Status == rbtype.StepWaitingApproval
	})
	key := step(v, "j").CorrelationKey
	require.NoError(t, b.engine.Decide(b.ctx, id, "g", false, "ops", "no"))
	v = b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, rbtype.StepCancelled, step(v, "j").Status)
	require.Eventually(t, func() bool {
		return slices.Contains(b.eventTypes(t, id), "INVOCATION_CANCEL_SENT j")
	}, 10*time.Second, 20*time.Millisecond, "the abort's request to stop is recorded")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, cancels, 1)
	require.Equal(t, key, cancels[0]["correlation_key"])
	require.Equal(t, "job-9", cancels[0]["external_id"])
}

// A person who fails an escalated step under on_failure: abort aborts the
// runbook as a failure inside an advance would: a parked branch is
// cancelled, what has not started is skipped, and the runbook fails at
// once rather than after its other branches ran.
func TestResolveFailAborts(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait-escalate :as @w) (t.wait :as @other) (t.echo :after @w :as @n)`, nil)
	b.waitFor(t, id, "w escalated, other parked", func(v *apitype.RunbookView) bool {
		return step(v, "w").Status == rbtype.StepEscalated && step(v, "other").Status == rbtype.StepParked
	})
	require.NoError(t, b.engine.Resolve(b.ctx, id, "w", machine.Resolution{Action: machine.ResolveFail, By: "ops"}))
	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, rbtype.StepFailed, step(v, "w").Status)
	require.Equal(t, rbtype.StepCancelled, step(v, "other").Status)
	require.Equal(t, rbtype.StepSkipped, step(v, "n").Status)
	invs, err := b.store.InvocationsOf(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, invs, 2)
	for _, inv := range invs {
		require.NotEqual(t, rbtype.InvocationActive, inv.Status, "the wait for %s ended with the abort", inv.CorrelationKey)
	}
	types := b.eventTypes(t, id)
	require.Contains(t, types, "STEP_CANCELLED other")
	require.Contains(t, types, "STEP_SKIPPED n")
	require.Equal(t, "RUNBOOK_FAILED", types[len(types)-1])
}
