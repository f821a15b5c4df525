package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/client"
)

// logLines decodes a daemon's JSON log lines.
func logLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(logs, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

// Under attack (docs/reliability.md), row 4: an unauthenticated client that sends forged and
// stale signatures, requests without a token, bodies over the cap and
// more bodies at once than its address may, hundreds of each, makes the
// daemon write no ERROR line and at most one line per kind of refusal
// (within ten seconds), each with the number held back; the metric counts
// every one.
func TestRefusalsAreCountedAndLoggedQuietly(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "RBD_MAX_BODIES_PER_ADDRESS=1", "RBD_MAX_CONCURRENT_BODIES=1", "RBD_MAX_CONCURRENT_WEBHOOKS=1", "RBD_MAX_BODY=4096")
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\n")
	secret := e.file(t, "secret", "whsec\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", secret)
	webhook := d.server + "/v1/notifications"
	note := `{"correlation_key": "k", "status": "completed"}`
	const n = 100
	start := time.Now()
	for i := 0; i < n; i++ {
		forged := fmt.Sprintf("t=%d,v1=%s", time.Now().Unix(), strings.Repeat("ab", 32))
		status, _ := send(t, "POST", webhook, note, client.SignatureHeader, forged)
		require.Equal(t, http.StatusUnauthorized, status)
		status, _ = send(t, "POST", webhook, note, client.SignatureHeader, client.Sign([]byte("whsec"), []byte(note), time.Now().Add(-time.Hour)))
		require.Equal(t, http.StatusUnauthorized, status)
		status, _ = send(t, "POST", d.server+"/v1/runbooks", `{"source": "(t.echo)"}`)
		require.Equal(t, http.StatusUnauthorized, status)
		status, _ = send(t, "POST", d.server+"/v1/runbooks", `{"source": "`+strings.Repeat("x", 5000)+`"}`, "Authorization", "Bearer tok")
		require.Equal(t, http.StatusRequestEntityTooLarge, status)
	}
	// One body trickling holds its address's only place.
	conn := dialRaw(t, d)
	_, err := fmt.Fprintf(conn, "POST /v1/runbooks HTTP/1.1\r\nHost: rbd\r\nAuthorization: Bearer tok\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	for i := 0; i < n; i++ {
		status, _ := send(t, "POST", d.server+"/v1/runbooks", `{"source": "(t.echo)"}`, "Authorization", "Bearer tok")
		require.Equal(t, http.StatusServiceUnavailable, status)
	}
	conn.Close()
	took := time.Since(start)

	refused := map[string]int{}
	for _, line := range logLines(t, d.logs.String()) {
		require.NotEqual(t, "ERROR", line["level"], "a client's fault logged as an error: %v", line)
		if line["msg"] == "request refused" {
			refused[line["reason"].(string)]++
		}
	}
	for _, reason := range []string{"signature", "token", "body_too_large", "address_busy"} {
		require.Positive(t, refused[reason], "refusals of %s are never logged", reason)
		require.LessOrEqual(t, refused[reason], 1+int(took/(10*time.Second)),
			"refusals of %s logged more than once in ten seconds, in %v: %v", reason, took, refused)
	}

	_, metrics := send(t, "GET", d.server+"/metrics", "")
	for reason, want := range map[string]int{"signature": 2 * n, "token": n, "body_too_large": n, "address_busy": n} {
		require.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^rbd_http_refusals_total\{reason="%s"\} %d$`, reason, want)), metrics)
	}
}
