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
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// Under attack (docs/reliability.md), row 12: a notification's error.code has the taxonomy's
// shape (upper-case letters, digits and _), else 400; and what other
// people wrote (an error message, a decider's name) reaches a terminal
// through rbd status and rbd list with its control characters escaped,
// never as escape sequences the terminal would act on.
func TestTheCLIPrintsNoEscapeSequencesFromTheDaemon(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs+`
- name: gate
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
`)
	d := e.start(t, "--verbs", verbs)
	rbd := d.client("")
	ctx := context.Background()
	keys := parkWaits(t, d, "", "esc", 2)
	note := func(key, code, message string) (int, string) {
		body, err := json.Marshal(map[string]any{"correlation_key": key, "status": "failed",
			"error": map[string]string{"code": code, "message": message}})
		require.NoError(t, err)
		return send(t, "POST", d.server+"/v1/notifications", string(body))
	}
	status, out := note(keys[0], "CARD_DECLINED", "\x1b]0;pwned\x07\x1b[2J the card was declined")
	require.Equal(t, http.StatusAccepted, status, out)

	sub, err := rbd.Submit(ctx, apitype.SubmitRequest{Source: "(t.gate :as @g)"})
	require.NoError(t, err)
	waitUntil(t, "the gate", func() (bool, error) {
		v, err := rbd.Get(ctx, sub.ID.String())
		return err == nil && v.State == "awaiting_approval", err
	})
	_, err = rbd.Reject(ctx, sub.ID.String(), "g", apitype.DecisionRequest{By: "mallory\x1b[8m", Comment: "no"})
	require.NoError(t, err)
	waitUntil(t, "the runbooks to fail", func() (bool, error) {
		page, err := rbd.List(ctx, client.ListRequest{Status: rbtype.RunbookFailed, Limit: 10})
		return err == nil && len(page.Runbooks) == 2, err
	})

	page, err := rbd.List(ctx, client.ListRequest{Limit: 10})
	require.NoError(t, err)
	var all strings.Builder
	commands := [][]string{{"list"}}
	for _, r := range page.Runbooks {
		commands = append(commands, []string{"status", r.ID.String()})
	}
	for _, command := range commands {
		code, out := e.exitWithin(t, time.Minute, append(command, "--server", d.server)...)
		require.Equal(t, 0, code, out)
		require.NotContains(t, out, "\x1b", "rbd %s printed an escape sequence:\n%q", command[0], out)
		require.NotContains(t, out, "\x07")
		all.WriteString(out)
	}
	require.Contains(t, all.String(), `\x1b]0;pwned`, "escaped, not dropped")
	require.Contains(t, all.String(), `mallory\x1b[8m`)

	for _, code := range []string{"\x1b[31mEVIL", "lower_case", "SPACE IN", strings.Repeat("A", 65), ""} {
		status, out := note(keys[1], code, "x")
		require.Equal(t, http.StatusBadRequest, status, "code %q: %s", code, out)
	}
}
