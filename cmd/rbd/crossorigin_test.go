package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Under attack (docs/reliability.md), round 4, row 14: a daemon without tokens accepted cross-origin
// "simple" POSTs (text/plain, forms), which a browser sends without a
// preflight: any web page open on a developer's machine could submit,
// approve or cancel on their daemon. Now a request that changes something
// is refused there (403) when it comes from another site's page or its
// body is not declared JSON; scripts and the console go on as before.
func TestAnOpenDaemonRefusesWebPagesRequests(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--verbs", verbs)
	host := strings.TrimPrefix(d.server, "http://")
	body := `{"source": "(t.wait :as @w)"}`

	for _, h := range [][]string{
		{"Content-Type", "text/plain;charset=UTF-8", "Origin", "https://evil.example"},
		{"Content-Type", "text/plain"},
		{"Content-Type", "application/x-www-form-urlencoded"},
		{"Content-Type", "application/json", "Origin", "https://evil.example"},
		{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"},
	} {
		status, out := send(t, "POST", d.server+"/v1/runbooks", body, h...)
		require.Equal(t, http.StatusForbidden, status, "%v: %s", h, out)
		require.Contains(t, out, `"code":"FORBIDDEN"`)
	}
	// A script, the CLI and the console (same origin) still submit.
	status, out := send(t, "POST", d.server+"/v1/runbooks", body)
	require.Equal(t, http.StatusCreated, status, out)
	status, out = send(t, "POST", d.server+"/v1/runbooks", `{"source": "(t.wait :as @v)"}`, "Content-Type", "application/json", "Origin", "http://"+host)
	require.Equal(t, http.StatusCreated, status, out)
	var id struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &id))
	// A page's cancel is refused too; nothing was cancelled.
	status, out = send(t, "POST", d.server+"/v1/runbooks/"+id.ID+"/cancel", "{}", "Content-Type", "text/plain", "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, status, out)
	_, out = send(t, "GET", d.server+"/v1/runbooks/"+id.ID, "")
	require.NotContains(t, out, `"status":"cancel`)
}
