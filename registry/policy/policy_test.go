package policy

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// known is the tags the tests' catalogue carries besides the well-known.
var known = KnownTags([]string{"crm_write"})

func parse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse("policy.yaml", []byte(src), known)
	require.NoError(t, err)
	return p
}

func TestParseRefusesMistakesNamingFileLineAndKey(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"empty", "", []string{"policy.yaml:1: the file is empty; a policy has a default: block, a tenants: block, or both"}},
		{"not YAML", "default: [", []string{"policy.yaml:1: not valid YAML: line 1: did not find expected node content"}},
		{"unknown top key", "defaults: {}\n", []string{
			`policy.yaml:1: defaults: unknown key (valid keys: default, tenants); did you mean "default"?`}},
		{"unknown rule key", "default:\n  gates: [external_send]\n", []string{
			`policy.yaml:2: default.gates: unknown key (valid keys: auto_exec, budget, deny, gate, max_risk, modes, trust); did you mean "gate"?`}},
		{"key twice", "default:\n  gate: [pii]\n  gate: [financial]\n", []string{"policy.yaml:3: default.gate: given twice"}},
		{"unknown risk", "tenants:\n  acme: {max_risk: hihg}\n", []string{
			`policy.yaml:2: tenants.acme.max_risk: unknown risk "hihg" (expected low, medium, high); did you mean "high"?`}},
		{"a pattern that matches nothing", "default:\n  gate: [external_sned]\n", []string{
			`policy.yaml:2: default.gate[0]: tag pattern "external_sned" matches no tag (known tags: crm_write, destructive, draft_only, external_send, financial, pii, read_only); did you mean "external_send"?`}},
		{"a malformed pattern", "default:\n  deny: [\"destr[uctive\"]\n", []string{
			`policy.yaml:2: default.deny[0]: tag pattern "destr[uctive" is malformed (a tag, or a glob with * ? and [...])`}},
		{"a pattern that is not text", "default:\n  deny: [{a: b}]\n", []string{
			`policy.yaml:2: default.deny[0]: must be a tag pattern (text), as in external_send or external_*`}},
		{"not a list", "default:\n  auto_exec: read_only\n", []string{
			`policy.yaml:2: default.auto_exec: must be a list of tag patterns, as in [external_send, financial]`}},
		{"a negative budget", "default:\n  budget: {month: {cost_usd: -5}}\n", []string{
			`policy.yaml:2: default.budget.month.cost_usd: -5 must be a number at or above zero`}},
		{"a budget that is not a number", "tenants:\n  acme:\n    budget:\n      runbook: {cost_usd: \"20\", tokens: lots}\n", []string{
			`policy.yaml:4: tenants.acme.budget.runbook.cost_usd: "20" is not a number`,
			`policy.yaml:4: tenants.acme.budget.runbook.tokens: "lots" is not a number`}},
		{"tokens not whole", "default:\n  budget: {day: {tokens: 1.5}}\n", []string{
			`policy.yaml:2: default.budget.day.tokens: 1.5 is not a whole number of tokens`}},
		{"an unknown budget scope", "default:\n  budget: {week: {cost_usd: 5}}\n", []string{
			`policy.yaml:2: default.budget.week: unknown key (valid keys: day, month, runbook)`}},
		{"an unknown measure", "default:\n  budget: {day: {usd: 5}}\n", []string{
			`policy.yaml:2: default.budget.day.usd: unknown key (valid keys: cost_usd, credits, tokens)`}},
		{"a tenant name a token cannot have", "tenants:\n  Acme: {}\n", []string{
			`policy.yaml:2: tenants.Acme: tenant "Acme" must be lower-case letters, digits, - and _, at most 64, as a token line names it`}},
		{"gated and let run by one block", "default:\n  gate: [external_*]\n  auto_exec: [external_send]\n", []string{
			`policy.yaml:2: default: tag external_send is both gated (external_*) and let run unattended (external_send); say which`}},
		{"aliases", "default: &d {gate: [pii]}\ntenants:\n  acme: *d\n", []string{
			`policy.yaml:1: anchors and aliases are not allowed in a policy; write each rule out`,
			`policy.yaml:3: anchors and aliases are not allowed in a policy; write each rule out`}},
		{"two documents", "default: {}\n---\ntenants: {}\n", []string{"policy.yaml:3: a policy is one YAML document; this is a second"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("policy.yaml", []byte(tc.src), known)
			require.Nil(t, p)
			var perr *Error
			require.ErrorAs(t, err, &perr)
			var got []string
			for _, pr := range perr.Problems {
				got = append(got, pr.String())
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestTheBuiltinPolicyNeverSendsUnattended(t *testing.T) {
	tn := Builtin().Tenant("default")
	send := Step{Verb: "outreach.send-email", Tags: []string{TagExternalSend}, Risk: rbtype.RiskLow}
	require.Equal(t, Decision{Action: Gate, Rule: RuleNeverAutoSend, Tag: TagExternalSend,
		Reason: "verb outreach.send-email is tagged external_send, which never runs unattended unless auto_exec lists it"}, tn.Decide(send))
	require.Equal(t, None, tn.Decide(Step{Verb: "kyc.open-case", Risk: rbtype.RiskHigh}).Action, "nothing else is said")
	require.Equal(t, None, tn.Decide(Step{Verb: "x.wipe", Tags: []string{TagDestructive}, Risk: rbtype.RiskLow}).Action, "nothing is denied")
}

const sample = `
default:                             # every tenant not listed under tenants
  gate: [external_send, financial]
  deny: [destructive]
  auto_exec: [read_only, draft_only]
  max_risk: high
  budget: {runbook: {cost_usd: 20}, month: {cost_usd: 2000, tokens: 50000000}}
tenants:
  acme: {gate: [external_send], max_risk: medium}
  bots:
    auto_exec: [external_send, read_only]
    deny: []
  strict:
    gate: [external_send]
    auto_exec: [external_send]
`

func TestDecide(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(sample), known)
	var perr *Error
	require.ErrorAs(t, err, &perr, "strict gates and lets run one tag")
	require.Len(t, perr.Problems, 1)
	require.Equal(t, "tenants.strict", perr.Problems[0].Key)
	require.Nil(t, p)
	p = parse(t, sample[:len(sample)-len("  strict:\n    gate: [external_send]\n    auto_exec: [external_send]\n")])

	step := func(verb string, risk rbtype.Risk, tags ...string) Step {
		return Step{Key: "s", Verb: verb, Tags: tags, Risk: risk}
	}
	tests := []struct {
		tenant string
		step   Step
		action Action
		rule   string
	}{
		{"other", step("outreach.send-email", rbtype.RiskLow, "external_send"), Gate, "default.gate"},
		{"other", step("pay.wire", rbtype.RiskLow, "financial", "read_only"), Gate, "default.gate"},
		{"other", step("crm.read", rbtype.RiskLow, "read_only"), AutoExec, "default.auto_exec"},
		{"other", step("crm.wipe", rbtype.RiskLow, "destructive", "read_only"), Deny, "default.deny"},
		{"other", step("crm.update", rbtype.RiskMedium, "crm_write"), None, ""},
		{"other", step("kyc.approve", rbtype.RiskHigh), None, ""},
		// acme: its own gate, the default's deny and auto_exec, its own ceiling.
		{"acme", step("pay.wire", rbtype.RiskLow, "financial"), None, ""},
		{"acme", step("outreach.send-email", rbtype.RiskLow, "external_send"), Gate, "tenants.acme.gate"},
		{"acme", step("crm.wipe", rbtype.RiskLow, "destructive"), Deny, "default.deny"},
		{"acme", step("kyc.approve", rbtype.RiskHigh), Deny, "tenants.acme.max_risk"},
		{"acme", step("crm.update", rbtype.RiskMedium), None, ""},
		// bots: its own auto_exec wins over the gate it inherits, the
		// built-in rule included; its empty deny clears the default's.
		{"bots", step("outreach.send-email", rbtype.RiskLow, "external_send"), AutoExec, "tenants.bots.auto_exec"},
		{"bots", step("pay.wire", rbtype.RiskLow, "financial"), Gate, "default.gate"},
		{"bots", step("crm.wipe", rbtype.RiskLow, "destructive"), None, ""},
		// Fail closed: a risk the policy does not know.
		{"other", step("x.y", "extreme"), Deny, RuleUndecidable},
		{"other", step("x.y", ""), Deny, RuleUndecidable},
		{"other", step("x.y", "", "read_only"), None, ""},
	}
	for _, tc := range tests {
		d := p.Tenant(tc.tenant).Decide(tc.step)
		require.Equal(t, tc.action, d.Action, "%s: %s %v", tc.tenant, tc.step.Verb, tc.step.Tags)
		require.Equal(t, tc.rule, d.Rule, "%s: %s %v", tc.tenant, tc.step.Verb, tc.step.Tags)
		if tc.action != None {
			require.NotEmpty(t, d.Reason)
		}
	}
	d := p.Tenant("acme").Decide(step("outreach.send-email", rbtype.RiskLow, "external_send"))
	require.Equal(t, "external_send", d.Pattern)
	require.Equal(t, "external_send", d.Tag)

	// A tenant's auto_exec lets external_send run only when it names it.
	bots := parse(t, "tenants:\n  bots: {auto_exec: [draft_only]}\n").Tenant("bots")
	require.Equal(t, RuleNeverAutoSend, bots.Decide(step("x.send", rbtype.RiskLow, "draft_only", "external_send")).Rule)
	require.Equal(t, AutoExec, parse(t, "tenants:\n  bots: {auto_exec: [external_*]}\n").Tenant("bots").
		Decide(step("x.send", rbtype.RiskLow, "external_send")).Action)
}

func TestBudgetsInheritByScope(t *testing.T) {
	p := parse(t, sample[:len(sample)-len("  strict:\n    gate: [external_send]\n    auto_exec: [external_send]\n")]+
		"  rich:\n    budget: {month: {cost_usd: 9000}}\n")
	b, rule := p.Tenant("rich").Budget(rbtype.BudgetMonth)
	require.Equal(t, 9000.0, *b.CostUSD)
	require.Nil(t, b.Tokens, "a scope a tenant sets replaces the default's as a whole")
	require.Equal(t, "tenants.rich.budget.month", rule)
	b, rule = p.Tenant("rich").Budget(rbtype.BudgetRunbook)
	require.Equal(t, 20.0, *b.CostUSD)
	require.Equal(t, "default.budget.runbook", rule)
	b, _ = p.Tenant("rich").Budget(rbtype.BudgetDay)
	require.True(t, b.Empty())
	b, _ = Builtin().Tenant("x").Budget(rbtype.BudgetMonth)
	require.True(t, b.Empty())
}

func TestHashes(t *testing.T) {
	base := "default: {gate: [financial]}\ntenants:\n  acme: {max_risk: medium}\n  beta: {}\n"
	p := parse(t, base)
	require.Equal(t, p.Tenant("beta").Hash(), p.Tenant("unlisted").Hash(), "the same rules, the same hash")
	require.NotEqual(t, p.Tenant("acme").Hash(), p.Tenant("beta").Hash())
	require.NotEqual(t, Builtin().Tenant("beta").Hash(), p.Tenant("beta").Hash())
	require.Equal(t, Builtin().Tenant("x").Hash(), Builtin().Tenant("y").Hash())
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, p.Tenant("acme").Hash())

	budgeted := parse(t, base+"  gamma: {budget: {day: {cost_usd: 1}}}\n")
	require.Equal(t, p.Tenant("beta").Hash(), budgeted.Tenant("gamma").Hash(), "a budget does not change what is admitted")
	require.NotEqual(t, p.Hash(), budgeted.Hash(), "but it is part of the file's hash")

	// Where a list comes from matters: an inherited gate yields to a
	// tenant's own auto_exec.
	own := parse(t, "tenants:\n  a: {gate: [pii], auto_exec: [read_only]}\n")
	inherited := parse(t, "default: {gate: [pii]}\ntenants:\n  a: {auto_exec: [read_only]}\n")
	require.NotEqual(t, own.Tenant("a").Hash(), inherited.Tenant("a").Hash())
}

func TestVerbScope(t *testing.T) {
	s, err := ParseVerbScope("kyc.*,screening.run")
	require.NoError(t, err)
	require.True(t, s.Allows("kyc.open-case"))
	require.True(t, s.Allows("screening.run"))
	require.False(t, s.Allows("screening.runner"))
	require.False(t, s.Allows("outreach.send-email"))
	require.Equal(t, "kyc.*,screening.run", s.String())
	require.True(t, VerbScope(nil).Allows("anything.at-all"))
	require.Equal(t, "*", VerbScope(nil).String())
	for _, bad := range []string{"kyc.[", "kyc.*,,x", "", "kyc/*", "kyc.* "} {
		_, err := ParseVerbScope(bad)
		require.Error(t, err, bad)
	}
}

// Only a policy that caps some tenant's day or month makes an advance read
// the spend of tenants with no budget set in the database.
func TestCapsTenantSpend(t *testing.T) {
	require.False(t, Builtin().CapsTenantSpend())
	require.False(t, parse(t, "default:\n  budget: {runbook: {cost_usd: 5}}\n").CapsTenantSpend(),
		"a runbook's budget is checked against the runbook's own row")
	require.True(t, parse(t, "default:\n  budget: {day: {cost_usd: 100}}\n").CapsTenantSpend())
	require.True(t, parse(t, "tenants:\n  acme: {budget: {month: {tokens: 1000}}}\n").CapsTenantSpend())
}
