package policy

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// Without a policy file only read_only runs unattended: a step that
// reaches outside waits for a person whatever its tags, unless one of them
// is auto-executed (docs/design/semantics.md section 17).
func TestTheBuiltinPolicyGatesByEffect(t *testing.T) {
	tn := Builtin().Tenant("default")
	call := func(effects rbtype.SideEffects, tags ...string) Step {
		return Step{Verb: "crm.update", Tags: tags, Risk: rbtype.RiskLow, SideEffects: effects}
	}
	d := tn.Decide(call(rbtype.SideEffectsExternalCall))
	require.Equal(t, Gate, d.Action)
	require.Equal(t, RuleGateByEffect, d.Rule)
	require.Contains(t, d.Reason, "it has no policy_tags")
	require.Equal(t, RuleGateByEffect, tn.Decide(call(rbtype.SideEffectsHuman)).Rule)
	require.Equal(t, RuleGateByEffect, tn.Decide(call(rbtype.SideEffectsExternalCall, "crm_write")).Rule,
		"a tag nobody auto-executes does not let it run")
	ro := tn.Decide(call(rbtype.SideEffectsExternalCall, TagReadOnly))
	require.Equal(t, AutoExec, ro.Action)
	require.Equal(t, "builtin.auto_exec", ro.Rule)
	require.Equal(t, None, tn.Decide(call(rbtype.SideEffectsNone)).Action, "a step that reaches nothing is not gated")
	require.Equal(t, None, tn.Decide(call(rbtype.SideEffectsInternalDB)).Action)
	require.Equal(t, RuleNeverAutoSend, tn.Decide(call(rbtype.SideEffectsExternalCall, TagExternalSend, TagReadOnly)).Rule,
		"external_send is never auto-sent, read_only or not")

	// A file's own auto_exec replaces the built-in read_only.
	p := parse(t, "default:\n  auto_exec: [crm_write]\n")
	require.Equal(t, AutoExec, p.Tenant("x").Decide(call(rbtype.SideEffectsExternalCall, "crm_write")).Action)
	require.Equal(t, RuleGateByEffect, p.Tenant("x").Decide(call(rbtype.SideEffectsExternalCall, TagReadOnly)).Rule)
	// A file that sets no auto_exec keeps read_only's.
	p = parse(t, "default:\n  gate: [financial]\n")
	require.Equal(t, AutoExec, p.Tenant("x").Decide(call(rbtype.SideEffectsExternalCall, TagReadOnly)).Action)
	require.NotEqual(t, Builtin().Tenant("x").Hash(), parse(t, "default:\n  auto_exec: [crm_write]\n").Tenant("x").Hash())
}

// A verb earns running unattended after N approvals; the count comes from
// the store, the rule from the tenant's block or the default's.
func TestTrustEarned(t *testing.T) {
	p := parse(t, "default:\n  gate: [external_send]\n  trust: {\"billing.*\": {after: 3}}\ntenants:\n  acme:\n    trust: {billing.send-reminder: {after: 20}}\n  none:\n    trust: {}\n")
	send := Step{Verb: "billing.send-reminder", Tags: []string{TagExternalSend}, Risk: rbtype.RiskLow, SideEffects: rbtype.SideEffectsExternalCall}
	other := p.Tenant("other")
	require.Equal(t, Gate, other.Decide(send).Action)
	send.Approvals = 2
	require.Equal(t, Gate, other.Decide(send).Action)
	send.Approvals = 3
	d := other.Decide(send)
	require.Equal(t, AutoExec, d.Action, "trust earned lifts the block's gate and the built-in rules")
	require.Equal(t, "default.trust", d.Rule)
	require.Equal(t, "billing.*", d.Pattern)
	require.Equal(t, Gate, p.Tenant("acme").Decide(send).Action, "acme asks 20")
	send.Approvals = 20
	require.Equal(t, "tenants.acme.trust", p.Tenant("acme").Decide(send).Rule)
	require.Equal(t, Gate, p.Tenant("none").Decide(send).Action, "an empty trust clears the default's")
	rule, _, ok := other.Trust("billing.refund")
	require.True(t, ok)
	require.Equal(t, 3, rule.After)
	_, _, ok = other.Trust("crm.update")
	require.False(t, ok)

	// Trust never lifts a denial or the risk ceiling.
	denied := parse(t, "default:\n  deny: [external_send]\n  trust: {\"*\": {after: 1}}\n")
	send.Approvals = 5
	require.Equal(t, Deny, denied.Tenant("x").Decide(send).Action)

	for src, want := range map[string]string{
		"default:\n  trust: {billing.x: {after: 0}}\n":    `policy.yaml:2: default.trust.billing.x.after: "0" must be a whole number of approvals from 1 to 1000000`,
		"default:\n  trust: {billing.x: {aftr: 2}}\n":     `policy.yaml:2: default.trust.billing.x.aftr: unknown key (valid keys: after); did you mean "after"?`,
		"default:\n  trust: {\"bill[ing\": {after: 2}}\n": `policy.yaml:2: default.trust.bill[ing: verb pattern "bill[ing" is malformed (a verb name, or a glob with * ? and [...], as in billing.*)`,
		"default:\n  trust: {billing.x: {}}\n":            `policy.yaml:2: default.trust.billing.x: needs after: N, the approvals that earn running unattended`,
	} {
		_, err := Parse("policy.yaml", []byte(src), known)
		require.EqualError(t, err, want, src)
	}
}

func TestModesUnderPolicy(t *testing.T) {
	p := parse(t, "default:\n  modes: [execute, dry_run]\ntenants:\n  agents: {modes: [draft_only, dry_run]}\n")
	ok, rule := p.Tenant("agents").AllowsMode(rbtype.ModeExecute)
	require.False(t, ok)
	require.Equal(t, "tenants.agents.modes", rule)
	ok, _ = p.Tenant("agents").AllowsMode(rbtype.ModeDraftOnly)
	require.True(t, ok)
	ok, rule = p.Tenant("x").AllowsMode(rbtype.ModeDraftOnly)
	require.False(t, ok)
	require.Equal(t, "default.modes", rule)
	for _, m := range rbtype.Modes {
		ok, _ := Builtin().Tenant("x").AllowsMode(m)
		require.True(t, ok, "without a rule every mode is allowed")
	}
	require.NotEqual(t, p.Tenant("agents").Hash(), p.Tenant("x").Hash())
	_, err := Parse("policy.yaml", []byte("default:\n  modes: [draft]\n"), known)
	require.EqualError(t, err, `policy.yaml:2: default.modes[0]: unknown mode "draft" (expected execute, dry_run, draft_only)`)
}
