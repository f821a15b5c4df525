package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// promtoolPath finds promtool (what .ci/ensure-promtool installs): the
// test skips without it on a developer's machine, and fails when CI is
// set.
func promtoolPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Getenv("CI") == "" {
		t.Skip("promtool check metrics skipped: no promtool installed (run .ci/ensure-promtool, or apt-get install prometheus)")
	}
	t.Fatal("CI is set but no promtool is installed: .ci/ensure-promtool should have installed it")
	return ""
}

// TestPromtoolChecksMetrics: what rbd serves at /metrics, after runbooks
// that completed, failed, parked and were refused a budget, passes
// `promtool check metrics` (names, units, help and types as Prometheus'
// own linter wants them; docs/daemon.md, "Metrics").
func TestPromtoolChecksMetrics(t *testing.T) {
	t.Parallel()
	promtool := promtoolPath(t)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs+`
- name: fail
  domain: t
  execution: {kind: sync, handler: http.call, side_effects: none, params: {url: "http://127.0.0.1:1/nothing"}, retry: {max_attempts: 1}}
`)
	d := e.start(t, "--verbs", verbs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := d.client("")
	for _, src := range []string{`(t.echo :v "a" :as @a)`, `(t.fail :as @f)`, `(t.wait :as @w)`} {
		sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: src})
		require.NoError(t, err)
		v, err := cl.Wait(ctx, sub.ID.String())
		require.NoError(t, err)
		for _, a := range v.NextActions {
			if a.Kind == apitype.ActionNotify { // a resume, timed
				_, err := cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: a.Args.CorrelationKey, Status: rbtype.OutcomeCompleted})
				require.NoError(t, err)
				_, err = cl.Wait(ctx, sub.ID.String())
				require.NoError(t, err)
			}
		}
	}
	status, _ := send(t, "POST", d.server+"/v1/runbooks", "{not json") // a refusal, counted
	require.Equal(t, http.StatusBadRequest, status)
	status, body := send(t, "GET", d.server+"/metrics", "")
	t.Logf("%d metric families", strings.Count(body, "# TYPE "))
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "rbd_parked_invocations")
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "promtool check metrics:\n%s", out)
}
