package lsp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/verbs"
)

// The hover of a high-risk verb names the gate its steps wait at, not the
// "none" its file leaves unsaid.
func TestVerbDocShowsAHighRiskVerbsGate(t *testing.T) {
	defs, diags := verbs.Parse("v.yaml", []byte(`- name: wire
  domain: pay
  risk: high
  execution: {kind: sync, handler: core.echo, side_effects: external_call, level: guarded}
`))
	require.Empty(t, diags)
	require.Contains(t, verbDoc(defs[0]), "- gate: `human_confirm`")
}

// The hover of a verb that declares no retry says the default table it
// is retried by, not "none"; one that declares max_attempts 1 says none.
func TestVerbDocShowsTheRetryPolicyRun(t *testing.T) {
	defs, diags := verbs.Parse("v.yaml", []byte(`- name: fetch
  domain: web
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: once
  domain: web
  execution: {kind: sync, handler: core.echo, side_effects: none, retry: {max_attempts: 1}}
`))
	require.Empty(t, diags)
	require.Contains(t, verbDoc(defs[0]), "- retry: NETWORK_TIMEOUT 3 attempts from PT1S to PT1M; RATE_LIMIT 5 attempts from PT2S to PT2M; TEMPORARY_PROVIDER_ERROR 3 attempts from PT1S to PT1M\n")
	require.Contains(t, verbDoc(defs[1]), "- retry: none\n")
}
