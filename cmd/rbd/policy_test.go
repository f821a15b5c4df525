package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// TestPolicyReloadsOnSIGHUP runs the agent-outreach example under rbd
// serve --policy: the agent's send waits for a person; a new policy,
// reloaded on SIGHUP, lets the tenant's sends run unattended from then on
// while the runbook admitted before keeps its gate; a broken file on a
// later SIGHUP keeps the policy in force, and says so.
func TestPolicyReloadsOnSIGHUP(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	example, err := os.ReadFile("../../examples/runbooks/agent-outreach/policy.yaml")
	require.NoError(t, err)
	polFile := e.file(t, "policy.yaml", string(example))
	tokens, err := os.ReadFile("../../examples/runbooks/agent-outreach/tokens.txt")
	require.NoError(t, err)
	d := e.start(t, "--verbs", "../../examples/runbooks/agent-outreach/verbs", "--policy", polFile,
		"--api-token-file", e.file(t, "tokens", string(tokens)))
	src, err := os.ReadFile("../../examples/runbooks/agent-outreach/agent-outreach.rbk")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agent, dana := d.client("agent-example-token"), d.client("dana-example-token")
	submit := func(company string) string {
		t.Helper()
		sub, err := agent.Submit(ctx, apitype.SubmitRequest{Source: string(src), Filename: "agent-outreach.rbk",
			Inputs: map[string]any{"company": company, "subject": "Introduction", "body": "Hello"}})
		require.NoError(t, err)
		return sub.ID.String()
	}
	settled := func(id string) *apitype.RunbookView {
		t.Helper()
		v, err := agent.Wait(ctx, id)
		require.NoError(t, err)
		return v
	}

	// Under the example's policy, the send waits for a person, and the
	// agent's token cannot approve it.
	first := submit("Acme")
	v := settled(first)
	require.Equal(t, rbtype.StateAwaitingApproval, v.State)
	_, err = agent.Approve(ctx, first, "mail.send#3", apitype.DecisionRequest{})
	require.ErrorIs(t, err, client.CodeForbidden)

	// The operator lets tenant growth's sends run unattended: SIGHUP.
	require.NoError(t, os.WriteFile(polFile, []byte(string(example)+
		"    auto_exec: [external_send, read_only, draft_only]\n"), 0o600))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	waitUntil(t, "the policy reloaded", func() (bool, error) {
		return strings.Contains(d.logs.String(), "SIGHUP: policy reloaded"), nil
	})
	second := submit("Globex")
	v = settled(second)
	require.Equal(t, rbtype.RunbookComplete, v.Status, "admitted under the new policy: sent unattended")
	v = settled(first)
	require.Equal(t, rbtype.StateAwaitingApproval, v.State, "admitted before: it still waits")

	// A broken file on the next SIGHUP: the policy in force stays.
	require.NoError(t, os.WriteFile(polFile, []byte("default:\n  gate: [external_sned]\n"), 0o600))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	waitUntil(t, "the broken reload logged", func() (bool, error) {
		return strings.Contains(d.logs.String(), "the policy file does not read; the policy in force is kept"), nil
	})
	require.Contains(t, d.logs.String(), `policy.yaml:2: default.gate[0]: tag pattern \"external_sned\" matches no tag`)
	third := submit("Initech")
	require.Equal(t, rbtype.RunbookComplete, settled(third).Status, "still the last good policy")

	// The person approves the first with no name: the token's actor is
	// recorded.
	_, err = dana.Approve(ctx, first, "mail.send#3", apitype.DecisionRequest{})
	require.NoError(t, err)
	v = settled(first)
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.Equal(t, "dana", v.Steps[2].GateDecision.By)
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
}
