package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

const e2eVerbs = `
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      v: {type: string}
- name: wait
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: P1D}
`

// send makes a raw request and returns the status and body.
func send(t *testing.T, method, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(out)
}

// TestStatusCodesOfTheRealDaemon checks docs/design/daemon.md's status codes against
// the rbd binary, with tokens and a webhook secret configured.
func TestStatusCodesOfTheRealDaemon(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\n")
	secretFile := e.file(t, "secret", "whsec\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", secretFile, "--max-body", "4096")
	auth := []string{"Authorization", "Bearer tok"}
	api := d.server + "/v1/runbooks"

	status, _ := send(t, "GET", api, "")
	require.Equal(t, http.StatusUnauthorized, status, "no token")
	status, _ = send(t, "GET", api, "", "Authorization", "Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, status, "wrong token")

	status, body := send(t, "POST", api, `{"source": "(t.ecko)"}`, auth...)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	var eb apitype.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &eb))
	require.Equal(t, httpapi.CodeCompileFailed, eb.Error.Code)
	require.Equal(t, "E010", string(eb.Error.Diagnostics[0].Code))

	status, _ = send(t, "POST", api, `{"source": `, auth...)
	require.Equal(t, http.StatusBadRequest, status, "malformed JSON")
	status, _ = send(t, "POST", api, `{"source": "`+strings.Repeat("x", 5000)+`"}`, auth...)
	require.Equal(t, http.StatusRequestEntityTooLarge, status)

	status, body = send(t, "POST", api, `{"source": "(t.wait :as @w)"}`, append(auth, "Idempotency-Key", "one")...)
	require.Equal(t, http.StatusCreated, status, body)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(body), &sub))
	status, _ = send(t, "POST", api, `{"source": "(t.wait :as @w)"}`, append(auth, "Idempotency-Key", "one")...)
	require.Equal(t, http.StatusOK, status, "a repeat")

	cl := d.client("tok")
	var key string
	waitUntil(t, "the step to park", func() (bool, error) {
		v, err := cl.Get(context.Background(), sub.ID.String())
		if err != nil || len(v.BlockedOn) == 0 {
			return false, err
		}
		key = v.BlockedOn[0].CorrelationKey
		return true, nil
	})

	note := `{"correlation_key": "` + key + `", "status": "completed", "result": {"ok": true}}`
	secret := []byte("whsec")
	webhook := d.server + "/v1/notifications"
	sig := client.SignatureHeader
	status, _ = send(t, "POST", webhook, note)
	require.Equal(t, http.StatusUnauthorized, status, "unsigned")
	status, _ = send(t, "POST", webhook, note, sig, client.Sign([]byte("forged"), []byte(note), time.Now()))
	require.Equal(t, http.StatusUnauthorized, status, "forged")
	status, _ = send(t, "POST", webhook, note, sig, client.Sign(secret, []byte(note), time.Now().Add(-10*time.Minute)))
	require.Equal(t, http.StatusUnauthorized, status, "stale")
	status, _ = send(t, "POST", webhook, `{"correlation_key": `, sig, client.Sign(secret, []byte(`{"correlation_key": `), time.Now()))
	require.Equal(t, http.StatusBadRequest, status, "malformed")
	huge := `{"correlation_key": "` + strings.Repeat("k", 5000) + `", "status": "completed"}`
	status, _ = send(t, "POST", webhook, huge, sig, client.Sign(secret, []byte(huge), time.Now()))
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	status, _ = send(t, "POST", webhook, note, sig, client.Sign(secret, []byte(note), time.Now()))
	require.Equal(t, http.StatusAccepted, status)
	status, _ = send(t, "POST", webhook, note, sig, client.Sign(secret, []byte(note), time.Now()))
	require.Equal(t, http.StatusOK, status, "duplicate")
	other := strings.Replace(note, "true", "false", 1)
	status, _ = send(t, "POST", webhook, other, sig, client.Sign(secret, []byte(other), time.Now()))
	require.Equal(t, http.StatusConflict, status, "same key, another payload")

	waitUntil(t, "the runbook to complete", func() (bool, error) {
		v, err := cl.Get(context.Background(), sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/nope": 404} {
		status, _ := send(t, "GET", d.server+path, "")
		require.Equal(t, want, status, path)
	}
	_, metrics := send(t, "GET", d.server+"/metrics", "")
	require.Contains(t, metrics, `rbd_steps_completed_total{verb="t.wait"} 1`)
	require.Contains(t, metrics, "rbd_notification_resume_latency_seconds_count 1")
	require.Contains(t, metrics, "process_resident_memory_bytes")
	require.Regexp(t, `(?m)^rbd_db_acquires_total [1-9]`, metrics, "the pool counts what it handed out")
	require.Regexp(t, `(?m)^rbd_db_max_connections 12$`, metrics, "2 per advancer (2) plus 8")
	require.Regexp(t, `(?m)^rbd_db_connections\{state="idle"\} \d`, metrics)
	require.Contains(t, metrics, "rbd_db_acquire_wait_seconds_total ")
	// The daemon is this test's binary: it reports the build the test sees.
	b := cli.BuildInfo()
	require.Contains(t, metrics, fmt.Sprintf("rbd_build_info{go_version=%q,revision=%q,version=%q} 1", b.GoVersion, b.Revision, b.Version))
	require.Contains(t, d.logs.String(), fmt.Sprintf(`"msg":"rbd starting","version":%q,"revision":%q`, b.Version, b.Revision))

	require.Equal(t, 0, d.stop(syscall.SIGTERM))
	require.NotContains(t, d.logs.String(), "whsec", "secrets stay out of the logs")
	require.NotContains(t, d.logs.String(), `"tok"`)
}

// keyServer is an external system behind http.call that records the
// Idempotency-Key of every request. Its first request hangs until the
// caller goes away; later ones answer at once.
type keyServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string
	arrived chan struct{}
}

func newKeyServer(t *testing.T) *keyServer {
	s := &keyServer{arrived: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		first := len(s.keys) == 1
		s.mu.Unlock()
		if first {
			close(s.arrived)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"charged": true}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *keyServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

func (s *keyServer) waitArrived(t *testing.T, d *daemon) {
	t.Helper()
	select {
	case <-s.arrived:
	case <-time.After(60 * time.Second):
		t.Fatalf("rbd never called the server:\n%s", d.logs.String())
	}
}

func chargeVerbs(url string) string {
	return fmt.Sprintf(`
- name: charge
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    level: guarded
    params: {url: "%s/charge"}
    timeouts: {run_timeout: PT60S}
`, url)
}

// TestKilledDaemonRepeatsNoSideEffect kills rbd (SIGKILL) in the middle
// of a guarded http.call to a slow server, and starts it again: the
// runbook completes, the server saw one idempotency key throughout, and
// the ledger says the first call may have committed (docs/design/semantics.md).
func TestKilledDaemonRepeatsNoSideEffect(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	server := newKeyServer(t)
	verbs := e.file(t, "verbs/t.yaml", chargeVerbs(server.URL))
	first := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	ctx := context.Background()
	sub, err := first.client("").Submit(ctx, apitype.SubmitRequest{Source: `(t.charge :amount 10 :as @charge)`})
	require.NoError(t, err)
	server.waitArrived(t, first)
	require.Equal(t, -1, first.stop(syscall.SIGKILL), "killed by the signal, no exit status")

	second, v := completeAfterKill(t, e, verbs, server, sub.ID.String())
	require.JSONEq(t, `{"charged": true}`, string(v.Outcomes["charge"]))
	// The ledger says, before the call was repeated, that the first may
	// have taken effect (docs/design/semantics.md section 7: audit fails closed).
	evs, err := second.client("").Events(ctx, sub.ID.String(), 0)
	require.NoError(t, err)
	var reclaimed, restarted int
	for i, ev := range evs {
		switch {
		case ev.Type == rbtype.EventStepReclaimed:
			require.Equal(t, "charge", ev.Step)
			require.JSONEq(t, `{"suspect_commit": true}`, string(ev.Data))
			reclaimed = i
		case ev.Type == rbtype.EventStepStarted && ev.Attempt == 2:
			restarted = i
		}
	}
	require.NotZero(t, reclaimed, "STEP_RECLAIMED is in the ledger")
	require.Less(t, reclaimed, restarted, "before the call is made again")
	require.Equal(t, 0, second.stop(syscall.SIGTERM))
}

// completeAfterKill starts a daemon after one was killed in a call to
// server, waits for the runbook to complete, and checks that the call was
// made again with the idempotency key of the first.
func completeAfterKill(t *testing.T, e *daemonEnv, verbs string, server *keyServer, id string) (*daemon, *apitype.RunbookView) {
	t.Helper()
	second := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	var v *apitype.RunbookView
	waitUntil(t, "the runbook to complete after the restart", func() (bool, error) {
		var err error
		v, err = second.client("").Get(context.Background(), id)
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	keys := server.seen()
	require.Len(t, keys, 2, "the call ran again after the kill")
	require.NotEmpty(t, keys[0])
	require.Equal(t, keys[0], keys[1], "the server saw a single idempotency key")
	return second, v
}

// TestKilledDaemonAfterAResumeInPlace kills rbd (SIGKILL) in the call
// that a notification's own transaction leased to it (docs/runtime.md: the
// resume in one transaction, with no wake-up or claim): the next daemon
// reclaims the step, and the server sees one idempotency key.
func TestKilledDaemonAfterAResumeInPlace(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	server := newKeyServer(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs+chargeVerbs(server.URL))
	first := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	ctx := context.Background()
	cl := first.client("")
	sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(t.wait :as @w) (t.charge :amount 10 :after @w :as @charge)`})
	require.NoError(t, err)
	var key string
	waitUntil(t, "the wait to park", func() (bool, error) {
		v, err := cl.Get(ctx, sub.ID.String())
		if err != nil || len(v.BlockedOn) == 0 {
			return false, err
		}
		key = v.BlockedOn[0].CorrelationKey
		return true, nil
	})
	_, err = cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{}`)})
	require.NoError(t, err)
	server.waitArrived(t, first)
	status, metrics := send(t, "GET", first.server+"/metrics", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, metrics, "rbd_resumes_in_place_total 1", "the notification resumed its runbook in place")
	require.Equal(t, -1, first.stop(syscall.SIGKILL))

	second, v := completeAfterKill(t, e, verbs, server, sub.ID.String())
	for _, st := range v.Steps {
		if st.Key == "charge" {
			require.Equal(t, 2, st.Attempt, "the second daemon's attempt")
		}
	}
	require.Equal(t, 0, second.stop(syscall.SIGTERM))
}

// TestSIGTERMReleasesLeasesAndExitsZero stops rbd with SIGTERM while a
// call hangs: the call gets the grace period, then rbd releases its lease
// and exits 0. The next daemon takes the step at once rather than after
// the (long) lease expires.
func TestSIGTERMReleasesLeasesAndExitsZero(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	server := newKeyServer(t)
	verbs := e.file(t, "verbs/t.yaml", chargeVerbs(server.URL))
	first := e.start(t, "--verbs", verbs, "--worker-id", "leaving", "--shutdown-grace", "300ms", "--lease-ttl", "10m")
	ctx := context.Background()
	sub, err := first.client("").Submit(ctx, apitype.SubmitRequest{Source: `(t.charge :amount 10 :as @charge)`})
	require.NoError(t, err)
	server.waitArrived(t, first)

	require.Equal(t, 0, first.stop(syscall.SIGTERM))
	require.Contains(t, first.logs.String(), "released leases at shutdown")
	store := pgtest.Open(t, e.schema)
	leases, err := store.WorkerLeases(ctx, "leaving")
	require.NoError(t, err)
	require.Empty(t, leases, "no lease left behind")

	second := e.start(t, "--verbs", verbs, "--lease-ttl", "10m")
	waitUntil(t, "the runbook to complete", func() (bool, error) {
		v, err := second.client("").Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	keys := server.seen()
	require.Len(t, keys, 2)
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, 0, second.stop(syscall.SIGINT))
}

// TestEmbeddedPostgresSurvivesRestart runs rbd with no database URL: it
// starts its own PostgreSQL under --data-dir, and what it stored is there
// after a restart. rbd migrate uses the same data.
func TestEmbeddedPostgresSurvivesRestart(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "DATABASE_URL=", "RBD_SCHEMA=") // the defaults: the embedded server, schema rbd
	// The server may run as the postgres user, who must reach the data.
	root, err := os.MkdirTemp("", "rbd-embedded-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o755))
	dataDir := filepath.Join(root, ".rbd")
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)

	d := e.start(t, "--data-dir", dataDir, "--verbs", verbs)
	require.Contains(t, d.logs.String(), "started the embedded PostgreSQL")
	ctx := context.Background()
	sub, err := d.client("").Submit(ctx, apitype.SubmitRequest{Source: `(t.echo :v "kept" :as @e)`})
	require.NoError(t, err)
	waitUntil(t, "the runbook to complete", func() (bool, error) {
		v, err := d.client("").Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
	require.Contains(t, d.logs.String(), "stopped the embedded PostgreSQL")

	var out, errOut strings.Builder
	require.Equal(t, exitOK, run([]string{"migrate", "--database-url=", "--data-dir", dataDir, "--log-format", "json"}, &out, &errOut), errOut.String())
	latest, err := durable.LatestSchemaVersion()
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("the database schema is current (version %d)\n", latest), out.String())

	again := e.start(t, "--data-dir", dataDir, "--verbs", verbs)
	v, err := again.client("").Get(ctx, sub.ID.String())
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.JSONEq(t, `{"v":"kept"}`, string(v.Outcomes["e"]))
	require.Equal(t, 0, again.stop(syscall.SIGTERM))
}

// TestAPIOnlyDaemonLeavesTheWorkToWorkers runs rbd serve --worker=false,
// which takes submissions but advances nothing, beside a worker rbd that
// shares the database and does the work.
func TestAPIOnlyDaemonLeavesTheWorkToWorkers(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	front := e.start(t, "--verbs", verbs, "--worker=false")
	ctx := context.Background()
	sub, err := front.client("").Submit(ctx, apitype.SubmitRequest{Source: `(t.echo :v "x" :as @e)`})
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // six poll intervals: long enough for a worker to act
	v, err := front.client("").Get(ctx, sub.ID.String())
	require.NoError(t, err)
	require.Equal(t, rbtype.StepPending, v.Steps[0].Status, "an API-only daemon advances nothing")

	worker := e.start(t, "--verbs", verbs)
	waitUntil(t, "the worker to complete the runbook", func() (bool, error) {
		v, err := front.client("").Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	require.Equal(t, 0, worker.stop(syscall.SIGTERM))
	require.Equal(t, 0, front.stop(syscall.SIGTERM))
}
