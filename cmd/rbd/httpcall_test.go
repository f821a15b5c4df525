package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// exitWithin runs rbd with args until it exits, as exitOf does, but kills
// it after wait: a daemon that should refuse to start may not.
func (e *daemonEnv) exitWithin(t *testing.T, wait time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, rbdBinary(), args...)
	cmd.Env = append(append(os.Environ(), "RBD_TEST_MAIN=1", "RBD_LISTEN=127.0.0.1:0", "RBD_SCHEMA="+e.schema,
		"DATABASE_URL="+pgtest.DatabaseURL()), e.env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return -1, string(out)
	}
	if exitErr, ok := err.(*exec.ExitError); ok {
		return exitErr.ExitCode(), string(out)
	}
	require.NoError(t, err, string(out))
	return 0, string(out)
}

// recordingServer records the requests it is sent: their method, path,
// query and one header.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecordingServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *recordingServer {
	s := &recordingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, fmt.Sprintf("%s %s key=%s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Api-Key")))
		s.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// Under attack (docs/reliability.md), row 10: http.call follows no redirect to another host (a
// POST would arrive there as a GET, with the verb's secret headers); a
// verb may allow redirects to its own host with params.redirects:
// same_host, and without it follows none.
func TestHTTPCallFollowsNoRedirectToAnotherHost(t *testing.T) {
	t.Parallel()
	elsewhere := newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"stolen": true}`) })
	var home *recordingServer
	home = newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/collect", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, home.URL+"/here", http.StatusTemporaryRedirect)
		default:
			fmt.Fprint(w, `{"ok": true}`)
		}
	})
	e := newDaemonEnv(t)
	e.env = append(e.env, "RB_TEST_API_KEY=sk-redirect-secret")
	verb := func(name, path, extra string) string {
		return fmt.Sprintf(`
- name: %s
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%s%s", headers: {X-Api-Key: "${env:RB_TEST_API_KEY}"}%s}
`, name, home.URL, path, extra)
	}
	ctx := context.Background()
	run := func(d *daemon, source string) *apitype.RunbookView {
		rbd := d.client("")
		sub, err := rbd.Submit(ctx, apitype.SubmitRequest{Source: source})
		require.NoError(t, err)
		var v *apitype.RunbookView
		waitUntil(t, source+" to finish", func() (bool, error) {
			v, err = rbd.Get(ctx, sub.ID.String())
			return err == nil && !v.Status.Running(), err
		})
		return v
	}
	// Verbs that say nothing of redirects follow none.
	d := e.start(t, "--verbs", e.file(t, "verbs/t.yaml", verb("away", "/away", "")+verb("moved", "/moved", "")))
	v := run(d, "(t.away)")
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.Contains(t, v.Failures[0].Message, "redirect")
	require.Empty(t, elsewhere.requests(), "the other host was called")
	v = run(d, "(t.moved)")
	require.Equal(t, rbtype.RunbookFailed, v.Status, "a redirect the verb does not allow")

	// A verb that allows redirects to its own host follows those only.
	d = e.start(t, "--verbs", e.file(t, "verbs/ok.yaml", verb("moved-ok", "/moved", ", redirects: same_host")+
		verb("away-ok", "/away", ", redirects: same_host")))
	v = run(d, "(t.away-ok)")
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.Contains(t, v.Failures[0].Message, "redirect")
	require.Empty(t, elsewhere.requests(), "the other host was called")
	v = run(d, "(t.moved-ok)")
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.Contains(t, home.requests(), "POST /here key=sk-redirect-secret", "same host, same method")
}

// Under attack (docs/reliability.md), row 11: an argument never replaces a query parameter the
// verb's author fixed in its URL: a verb whose input_schema names one is
// V004 when it is loaded (rbd does not start), and an argument that names
// one of a verb without a schema fails its step, the request unsent.
func TestArgumentsDoNotOverrideFixedQueryParameters(t *testing.T) {
	t.Parallel()
	server := newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"ok": true}`) })
	e := newDaemonEnv(t)
	bad := e.file(t, "verbs/bad.yaml", fmt.Sprintf(`
- name: search
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: none
    params: {url: "%s/search?scope=public", method: GET}
  input_schema:
    properties:
      q: {type: string}
      scope: {type: string}
`, server.URL))
	code, out := e.exitWithin(t, 30*time.Second, "serve", "--verbs", bad)
	require.Equal(t, exitFailed, code, "rbd started with a verb whose argument replaces a fixed query parameter: %s", out)
	require.Contains(t, out, "V004")
	require.Contains(t, out, "scope")

	open := e.file(t, "verbs/open.yaml", fmt.Sprintf(`
- name: search
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: none
    params: {url: "%s/search?scope=public", method: GET}
`, server.URL))
	d := e.start(t, "--verbs", open)
	rbd := d.client("")
	ctx := context.Background()
	sub, err := rbd.Submit(ctx, apitype.SubmitRequest{Source: `(t.search :q "x" :scope "private")`})
	require.NoError(t, err)
	var v *apitype.RunbookView
	waitUntil(t, "the step to fail", func() (bool, error) {
		v, err = rbd.Get(ctx, sub.ID.String())
		return err == nil && !v.Status.Running(), err
	})
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.Equal(t, rbtype.CodeInvalidInput, v.Failures[0].Code)
	for _, r := range server.requests() {
		require.False(t, strings.Contains(r, "scope=private"), "the fixed scope was replaced: %s", r)
	}
}
