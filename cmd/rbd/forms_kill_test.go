package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// SIGKILL while a failure hook runs, and while a for-each expands
// (docs/language.md, "The plan format"): nothing runs twice for one key,
// and nothing expands twice.

// bodyServer records each request's Idempotency-Key and body, and answers
// with answer. When hangFirst is set its first request hangs until the
// caller goes away; reached is closed when the first request arrives, and
// answered when the first answer has been written.
type bodyServer struct {
	*httptest.Server
	mu        sync.Mutex
	keys      []string
	bodies    []string
	reached   chan struct{}
	answered  chan struct{}
	hangFirst bool
	answer    string
}

func newBodyServer(t *testing.T, hangFirst bool, answer string) *bodyServer {
	s := &bodyServer{reached: make(chan struct{}), answered: make(chan struct{}), hangFirst: hangFirst, answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		s.bodies = append(s.bodies, string(body))
		first := len(s.keys) == 1
		s.mu.Unlock()
		if first {
			close(s.reached)
			if s.hangFirst {
				<-r.Context().Done()
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, s.answer)
		if first {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			close(s.answered)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *bodyServer) seen() (keys, bodies []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...), append([]string(nil), s.bodies...)
}

func waitClosed(t *testing.T, ch chan struct{}, what string, d *daemon) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s never happened:\n%s", what, d.logs.String())
	}
}

// waitFinished waits until a runbook has finished (its compensations and
// hooks done).
func waitFinished(t *testing.T, d *daemon, id string) *apitype.RunbookView {
	t.Helper()
	var v *apitype.RunbookView
	waitUntil(t, "the runbook to finish", func() (bool, error) {
		var err error
		v, err = d.client("").Get(context.Background(), id)
		return err == nil && v.FinishedAt != nil, err
	})
	return v
}

// TestKilledDaemonDuringAHookRunsItOnce fails a runbook whose failure hook
// posts to a server that hangs, kills rbd (SIGKILL) in that call, and
// starts it again: the hook is called again under the same idempotency
// key, with @failure filled, and the runbook finishes once it has.
func TestKilledDaemonDuringAHookRunsItOnce(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	server := newBodyServer(t, true, `{"posted": true}`)
	verbs := e.file(t, "verbs/t.yaml", fmt.Sprintf(`
- name: fail
  domain: t
  execution: {kind: sync, handler: core.fail, side_effects: none, params: {code: INVALID_INPUT, message: replica lag unknown}}
- name: post
  domain: chat
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%s/post"}
    timeouts: {run_timeout: PT60S}
`, server.URL))
	first := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	ctx := context.Background()
	sub, err := first.client("").Submit(ctx, apitype.SubmitRequest{Source: `(t.fail :as @probe)
(on-failure (chat.post :text (str "failover stopped: " @failure.code " at " @failure.step) :as @notify))`})
	require.NoError(t, err)
	waitClosed(t, server.reached, "the hook's call", first)
	require.Equal(t, -1, first.stop(syscall.SIGKILL), "killed by the signal, no exit status")

	second := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	v := waitFinished(t, second, sub.ID.String())
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	keys, bodies := server.seen()
	require.Len(t, keys, 2, "the hook's call was made again after the kill")
	require.NotEmpty(t, keys[0])
	require.Equal(t, keys[0], keys[1], "under one idempotency key: the hook ran once")
	for _, b := range bodies {
		require.JSONEq(t, `{"text": "failover stopped: INVALID_INPUT at probe"}`, b)
	}
	var hook *apitype.StepView
	for i := range v.Steps {
		if v.Steps[i].Key == "notify" {
			hook = &v.Steps[i]
		}
	}
	require.NotNil(t, hook)
	require.Equal(t, rbtype.StepComplete, hook.Status)
	require.Equal(t, "hook", hook.Kind)
	require.Equal(t, 2, hook.Attempt)
	evs, err := second.client("").Events(ctx, sub.ID.String(), 0)
	require.NoError(t, err)
	var types []string
	for _, ev := range evs {
		types = append(types, string(ev.Type))
	}
	require.Contains(t, types, "STEP_RECLAIMED")
	require.Equal(t, 2, strings.Count(strings.Join(types, " "), "HOOK_STARTED"))
	require.Equal(t, 1, strings.Count(strings.Join(types, " "), "HOOK_SUCCEEDED"))
	require.Equal(t, 0, second.stop(syscall.SIGTERM))
}

// TestKilledDaemonDuringAnExpansionExpandsOnce kills rbd (SIGKILL) the
// moment the step that produces a for-each's list of 1,000 hosts has its
// answer: whether the kill lands before the transaction that records it
// and expands the loop commits or after, the next daemon leaves one
// expansion, 1,000 iterations, each run once.
func TestKilledDaemonDuringAnExpansionExpandsOnce(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	hosts := make([]string, 1000)
	for i := range hosts {
		hosts[i] = fmt.Sprintf(`{"name": "h%d"}`, i)
	}
	server := newBodyServer(t, false, `{"items": [`+strings.Join(hosts, ",")+`]}`)
	verbs := e.file(t, "verbs/t.yaml", fmt.Sprintf(`
- name: hosts
  domain: inv
  execution:
    kind: sync
    handler: http.call
    side_effects: none
    params: {url: "%s/hosts"}
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
`, server.URL))
	second, v, evs := killAndComplete(t, e, verbs, `(inv.hosts :as @hosts)
(for-each @hosts.items :as @h (t.echo :name @h.name :as @each))
(t.echo :all @each :as @after)`, server.answered, "the list's answer")
	keys, _ := server.seen()
	t.Logf("the list was fetched %d time(s): the kill landed %s the commit", len(keys), map[bool]string{true: "before", false: "after"}[len(keys) > 1])
	require.Len(t, v.Steps, 3+1000, "the producer, the template, the step after it, and one step per host")
	// An iteration runs again only when its lease was taken back: the
	// first daemon's, killed while it ran, or the second's own when the
	// outcome waited in its queue past the 1 s lease (1,000 outcomes under
	// the race detector). Never because the loop was expanded twice.
	reclaimed := map[string]int{}
	for _, ev := range evs {
		if ev.Type == rbtype.EventStepReclaimed {
			reclaimed[ev.Step]++
		}
	}
	seen := map[string]bool{}
	for _, s := range v.Steps {
		require.False(t, seen[s.Key], "step %s stored once", s.Key)
		seen[s.Key] = true
		require.Equal(t, rbtype.StepComplete, s.Status, s.Key)
		if strings.HasPrefix(s.Key, "each[") {
			require.Equal(t, 1+reclaimed[s.Key], s.Attempt, "%s ran once but for its reclaimed leases", s.Key)
		}
	}
	expansions := eventsOfType(evs, rbtype.EventMapExpanded)
	var after struct {
		All []map[string]string `json:"all"`
	}
	require.NoError(t, json.Unmarshal(v.Outcomes["after"], &after))
	require.Len(t, after.All, 1000)
	require.Equal(t, "h999", after.All[999]["name"])
	require.Len(t, expansions, 1, "expanded once")
	require.JSONEq(t, `{"loop": "h", "count": 1000, "steps": 1000}`, string(expansions[0].Data))
	require.Equal(t, 0, second.stop(syscall.SIGTERM))
}

// TestKilledDaemonAfterAnExpansionKeepsIt is the other side of the kill
// above, made certain: rbd is killed (SIGKILL) while an iteration's call
// hangs, so the transaction that expanded the loop has committed. The
// next daemon keeps that expansion: the list is not fetched again, the
// loop is not expanded again, and the hanging iteration is called again
// under its own idempotency key.
func TestKilledDaemonAfterAnExpansionKeepsIt(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	list := newBodyServer(t, false, `{"items": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "e"}]}`)
	each := newBodyServer(t, true, `{"done": true}`)
	verbs := e.file(t, "verbs/t.yaml", fmt.Sprintf(`
- name: hosts
  domain: inv
  execution:
    kind: sync
    handler: http.call
    side_effects: none
    params: {url: "%s/hosts"}
- name: drain
  domain: inv
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%s/drain"}
    timeouts: {run_timeout: PT60S}
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
`, list.URL, each.URL))
	second, v, evs := killAndComplete(t, e, verbs, `(inv.hosts :as @hosts)
(for-each @hosts.items :as @h (inv.drain :name @h.name :as @each))
(t.echo :all @each :as @after)`, each.reached, "an iteration's call")
	listKeys, _ := list.seen()
	require.Len(t, listKeys, 1, "the list was fetched once: the expansion had committed")
	require.Len(t, v.Steps, 3+5, "the producer, the template, the step after it, and one step per host")
	keys, bodies := each.seen()
	require.Greater(t, len(keys), 5, "the hanging iteration was called again")
	byKey := map[string]map[string]bool{}
	for i, key := range keys {
		require.NotEmpty(t, key)
		if byKey[key] == nil {
			byKey[key] = map[string]bool{}
		}
		byKey[key][bodies[i]] = true
	}
	require.Len(t, byKey, 5, "one idempotency key per iteration, whatever was called again")
	for key, b := range byKey {
		require.Len(t, b, 1, "key %s was used for one host only", key)
	}
	var after struct {
		All []map[string]bool `json:"all"`
	}
	require.NoError(t, json.Unmarshal(v.Outcomes["after"], &after))
	require.Len(t, after.All, 5)
	require.Len(t, eventsOfType(evs, rbtype.EventMapExpanded), 1, "expanded once")
	require.Equal(t, 0, second.stop(syscall.SIGTERM))
}

// killAndComplete starts rbd with verbs, submits source, kills rbd
// (SIGKILL) once reached is closed, and starts another, which it returns
// once the runbook has completed, with the runbook and its events.
func killAndComplete(t *testing.T, e *daemonEnv, verbs, source string, reached chan struct{}, what string) (*daemon, *apitype.RunbookView, []apitype.Event) {
	t.Helper()
	first := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	ctx := context.Background()
	sub, err := first.client("").Submit(ctx, apitype.SubmitRequest{Source: source})
	require.NoError(t, err)
	waitClosed(t, reached, what, first)
	require.Equal(t, -1, first.stop(syscall.SIGKILL), "killed by the signal, no exit status")

	second := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	var v *apitype.RunbookView
	waitUntil(t, "the runbook to complete", func() (bool, error) {
		var err error
		v, err = second.client("").GetPage(ctx, sub.ID.String(), 0, 10000)
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	require.Nil(t, v.StepsNext, "every step on one page")
	evs, err := second.client("").Events(ctx, sub.ID.String(), 0)
	require.NoError(t, err)
	return second, v, evs
}

// eventsOfType is the events of one type, in order.
func eventsOfType(evs []apitype.Event, typ rbtype.EventType) []apitype.Event {
	var out []apitype.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}
