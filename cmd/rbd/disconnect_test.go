package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
)

// Under attack (docs/reliability.md), round 4, row 15: a client that disconnected mid-request was logged
// as ERROR "the database is unavailable", an outage that never was. Clients
// that give up on big submissions at every moment of their handling leave
// no ERROR line, and the daemon answers the next request as before.
func TestAClientLeavingIsNoDatabaseOutage(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--verbs", verbs)
	body, err := json.Marshal(apitype.SubmitRequest{Source: echoes(3000, "v")})
	require.NoError(t, err)
	for i := 0; i < 30; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(20+15*i)*time.Millisecond)
		req, err := http.NewRequestWithContext(ctx, "POST", d.server+"/v1/runbooks", strings.NewReader(string(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "leave-"+time.Now().Format(time.RFC3339Nano))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		cancel()
	}
	time.Sleep(time.Second) // the last handlers finish
	status, out := send(t, "POST", d.server+"/v1/runbooks", `{"source": "(t.echo :v \"after\")"}`)
	require.Less(t, status, 300, out)
	for _, line := range logLines(t, d.logs.String()) {
		require.NotEqual(t, "ERROR", line["level"], "a client leaving logged as an error: %v", line)
	}
}
