package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Under attack (docs/reliability.md), row 14: rbd serve warns, at start, of what a token file
// grants that its writer may not have meant: an admin whose submissions
// land in the default tenant beside other tokens of that tenant, a
// tenant's token with the admin role (an admin of every tenant), and
// tokens that name no actor (the ledger records whatever name their
// requests claim). A file without them draws no warning.
func TestTokenFileFootgunsAreWarnedOf(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", `tok-root
tok-dora roles=read,submit
tok-acme-admin tenant=acme actor=ann roles=admin
tok-acme tenant=acme actor=alice roles=read,submit
`)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)
	var warnings []string
	for _, line := range logLines(t, d.logs.String()) {
		if line["level"] == "WARN" {
			warnings = append(warnings, line["msg"].(string))
		}
	}
	all := strings.Join(warnings, "\n")
	require.Contains(t, all, "token 1 is an admin of the default tenant", "%s", all)
	require.Contains(t, all, "token 3 (tenant=acme) has the admin role")
	require.Contains(t, all, "tokens 1, 2 name no actor")
	for _, value := range []string{"tok-root", "tok-dora", "tok-acme"} {
		require.NotContains(t, d.logs.String(), value)
	}

	clean := e.file(t, "clean", "tok-a tenant=acme actor=alice roles=read,submit\ntok-b tenant=globex actor=bob roles=read\n")
	d = e.start(t, "--verbs", verbs, "--api-token-file", clean)
	for _, line := range logLines(t, d.logs.String()) {
		msg, _ := line["msg"].(string)
		require.False(t, line["level"] == "WARN" && strings.Contains(msg, "token"), "a warning for a clean file: %s", msg)
	}
}
