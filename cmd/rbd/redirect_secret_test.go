package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// Under attack (docs/reliability.md), round 4, row 16: with redirects: same_host, a 302 turned a POST
// into a GET, which the service answered 200: the step completed on a
// request that did not do what the verb asked, against docs/reliability.md
// ("keeping method and headers"). A 307 is followed with its method; a
// 302 or 303 after a POST is not, and the step fails naming it.
func TestSameHostRedirectsKeepTheMethod(t *testing.T) {
	t.Parallel()
	var home *recordingServer
	home = newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/found":
			http.Redirect(w, r, home.URL+"/here", http.StatusFound)
		case "/see-other":
			http.Redirect(w, r, home.URL+"/here", http.StatusSeeOther)
		case "/temporary":
			http.Redirect(w, r, home.URL+"/here", http.StatusTemporaryRedirect)
		default:
			fmt.Fprint(w, `{"ok": true}`)
		}
	})
	e := newDaemonEnv(t)
	verb := func(name, path string) string {
		return fmt.Sprintf(`
- name: %s
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%s%s", method: POST, redirects: same_host}
`, name, home.URL, path)
	}
	d := e.start(t, "--verbs", e.file(t, "verbs/t.yaml", verb("found", "/found")+verb("see-other", "/see-other")+verb("temporary", "/temporary")))
	run := func(source string) *apitype.RunbookView {
		rbd := d.client("")
		sub, err := rbd.Submit(context.Background(), apitype.SubmitRequest{Source: source})
		require.NoError(t, err)
		var v *apitype.RunbookView
		waitUntil(t, source+" to finish", func() (bool, error) {
			v, err = rbd.Get(context.Background(), sub.ID.String())
			return err == nil && !v.Status.Running(), err
		})
		return v
	}
	for _, source := range []string{"(t.found)", "(t.see-other)"} {
		v := run(source)
		require.Equal(t, rbtype.RunbookFailed, v.Status, "%s completed on a GET", source)
		require.Contains(t, v.Failures[0].Message, "would turn the POST into a GET")
	}
	for _, r := range home.requests() {
		require.False(t, strings.HasPrefix(r, "GET "), "the POST was sent again as %s", r)
	}
	v := run("(t.temporary)")
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.Contains(t, strings.Join(home.requests(), "\n"), "POST /here")
}

// Under attack (docs/reliability.md), round 4, row 6: a ${env:} secret in an http.call URL's path
// reached the step's error, the events, a dry run's result and the log.
// Each now shows the reference, never the value.
func TestURLPathSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	server := newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": "no"}`, http.StatusUnprocessableEntity)
	})
	e := newDaemonEnv(t)
	const secret = "hook-s3cr3t-path-token"
	e.env = append(e.env, "RB_HOOK_TOKEN="+secret)
	verbs := e.file(t, "verbs/t.yaml", fmt.Sprintf(`
- name: hook
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%s/hooks/${env:RB_HOOK_TOKEN}/send"}
- name: gone
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "http://127.0.0.1:1/hooks/${env:RB_HOOK_TOKEN}/send"}
`, server.URL))
	d := e.start(t, "--verbs", verbs)
	rbd := d.client("")
	ctx := context.Background()
	for _, req := range []apitype.SubmitRequest{
		{Source: "(t.hook)"}, {Source: "(t.gone)"}, {Source: "(t.hook :as @dry)", Mode: rbtype.ModeDryRun},
	} {
		sub, err := rbd.Submit(ctx, req)
		require.NoError(t, err)
		var v *apitype.RunbookView
		waitUntil(t, req.Source+" to finish", func() (bool, error) {
			v, err = rbd.Get(ctx, sub.ID.String())
			return err == nil && !v.Status.Running(), err
		})
		_, view := send(t, "GET", d.server+"/v1/runbooks/"+sub.ID.String(), "")
		_, events := send(t, "GET", d.server+"/v1/runbooks/"+sub.ID.String()+"/events", "")
		require.NotContains(t, view, secret, "%s: the view", req.Source)
		require.NotContains(t, events, secret, "%s: the events", req.Source)
		require.Contains(t, view+events, "${env:RB_HOOK_TOKEN}", "%s: the URL is shown with its reference", req.Source)
	}
	require.Len(t, server.requests(), 1, "the dry run sent nothing")
	require.Contains(t, server.requests()[0], secret, "the service got the secret")
	require.NotContains(t, d.logs.String(), secret, "the log")
}
