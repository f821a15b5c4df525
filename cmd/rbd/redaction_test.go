package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// Under attack (docs/reliability.md), row 9: a secret that a verb puts in its URL's query
// through ${env:...} stays out of the log when the call fails in
// transport (a refused connection): the log shows the URL as events do,
// without its query.
func TestTransportErrorsDoNotLogTheURLsSecrets(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "RB_TEST_API_KEY=sk-live-hunter2-9d8f7")
	verbs := e.file(t, "verbs/t.yaml", `
- name: fetch
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: none
    params: {url: "http://127.0.0.1:1/v1/things?api_key=${env:RB_TEST_API_KEY}", method: GET}
`)
	d := e.start(t, "--verbs", verbs)
	rbd := d.client("")
	ctx := context.Background()
	sub, err := rbd.Submit(ctx, apitype.SubmitRequest{Source: "(t.fetch)"})
	require.NoError(t, err)
	waitUntil(t, "the call to fail", func() (bool, error) {
		v, err := rbd.Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookFailed, err
	})
	require.Contains(t, d.logs.String(), "call failed", "the failure is logged")
	require.Contains(t, d.logs.String(), "127.0.0.1:1/v1/things")
	require.NotContains(t, d.logs.String(), "hunter2", "the secret reached the log")
	events, err := rbd.Events(ctx, sub.ID.String(), 0)
	require.NoError(t, err)
	for _, ev := range events {
		require.NotContains(t, string(ev.Data), "hunter2")
	}
}
