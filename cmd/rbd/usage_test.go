package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable/pgtest"
)

// Under attack (docs/reliability.md), row 7: a notification's usage of 2^63-1 tokens or 1.7e308
// dollars is refused at the door (tokens at most 10^12, cost and credits
// at most 10^9), and sums over what the ledger already holds saturate
// rather than fail: GET /v1/costs, for the tenant and for an admin, and
// the runbook's view still answer.
func TestUsageIsBoundedAndItsSumsSaturate(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\n")
	secret := e.file(t, "secret", "whsec\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", secret)
	ctx := context.Background()
	rbd := d.client("tok")
	notify := func(key, usage string) (int, string) {
		body := fmt.Sprintf(`{"correlation_key": %q, "status": "completed", "result": {}, "usage": %s}`, key, usage)
		return send(t, "POST", d.server+"/v1/notifications", body,
			client.SignatureHeader, client.Sign([]byte("whsec"), []byte(body), time.Now()))
	}
	keys := parkWaits(t, d, "tok", "usage", 2)
	for _, usage := range []string{
		`{"tokens_in": 9223372036854775807}`, `{"tokens_out": 1000000000001}`,
		`{"cost_usd": 1.7e308}`, `{"credits": 1000000001}`,
	} {
		status, out := notify(keys[0], usage)
		require.Equal(t, http.StatusBadRequest, status, "%s: %s", usage, out)
		require.Contains(t, out, "INVALID_REQUEST")
	}
	status, out := notify(keys[0], `{"tokens_in": 1000000000000, "cost_usd": 1000000000}`)
	require.Equal(t, http.StatusAccepted, status, out)

	// Rows stored before the bounds, beyond them: the sums saturate.
	sub, err := rbd.Submit(ctx, apitype.SubmitRequest{Source: `(t.echo :v "x")`})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, ok := psql(t, pgtest.DatabaseURL(), fmt.Sprintf(`INSERT INTO %s.step_attempt_rows
			(attempt_id, runbook_id, tenant, step_key, verb, attempt, finished_at, outcome, tokens_in, tokens_out, cost_usd, credits)
			VALUES ('%s', '%s', 'default', 'big-%d', 't.echo', 1, now(), 'succeeded', 9223372036854775807, 9223372036854775807, 1.7e308, 1.7e308)`,
			e.schema, uuid.New(), sub.ID, i))
		require.True(t, ok)
	}
	status, out = send(t, "GET", d.server+"/v1/costs?group_by=tenant", "", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusOK, status, out)
	require.Contains(t, out, `"tokens_in":9223372036854775807`)
	status, out = send(t, "GET", d.server+"/v1/runbooks/"+sub.ID.String(), "", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusOK, status, out)
}
