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
