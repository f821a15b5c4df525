package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// TestAdmissionFailsClosed: a step whose risk the policy cannot judge (its
// verb missing from the plan's table) is refused, unless it is read_only;
// a token's max_risk refuses a riskier step; the gates the policy decides
// land on the rows to store, each with its POLICY_GATED.
func TestAdmissionFailsClosed(t *testing.T) {
	cat := machineCatalogue(t)
	e := &Engine{cfg: Config{Catalogue: cat}}
	plan, diags := compiler.CompileSource("a.rbk", []byte("(m.echo :v 1 :as @a)\n(m.peek :v 2 :as @b)\n"), cat)
	require.False(t, diags.HasErrors())
	delete(plan.Verbs, "m.echo")
	delete(plan.Verbs, "m.peek")
	_, err := e.admit(context.Background(), DefaultTenant, plan, plan.Steps[:1])
	require.ErrorIs(t, err, rbtype.ErrPolicyDenied)
	require.ErrorContains(t, err, `step "a" (verb m.echo): the policy cannot judge verb m.echo`)
	adm, err := e.admit(context.Background(), DefaultTenant, plan, plan.Steps[1:])
	require.NoError(t, err, "a read_only step is admitted")
	require.Empty(t, adm.gates)

	wire, diags := compiler.CompileSource("w.rbk", []byte("(m.wire :amount 5 :as @w)\n(m.echo :v 1 :as @e)\n"), cat)
	require.False(t, diags.HasErrors())
	medium := WithScope(context.Background(), Scope{Tenant: DefaultTenant, MaxRisk: rbtype.RiskMedium})
	_, err = e.admit(medium, DefaultTenant, wire, wire.Steps)
	require.ErrorIs(t, err, rbtype.ErrForbidden)
	require.ErrorContains(t, err, `step "w" calls verb m.wire of risk high, above this token's max_risk medium`)
	admin := WithScope(context.Background(), Scope{Tenant: DefaultTenant, MaxRisk: rbtype.RiskMedium, All: true})
	_, err = e.admit(admin, DefaultTenant, wire, wire.Steps)
	require.NoError(t, err, "an admin's ceiling is high")

	// The policy gates every step it names; their rows get the gate.
	pol, err := policy.Parse("p.yaml", []byte("default: {gate: [read_only]}\n"), policy.WellKnownTags)
	require.NoError(t, err)
	e.machine.Policy = func() *policy.Policy { return pol }
	peek, diags := compiler.CompileSource("p.rbk", []byte("(m.peek :v 1 :as @p)\n(m.echo :v 2 :as @q)\n"), cat)
	require.False(t, diags.HasErrors())
	adm, err = e.admit(context.Background(), DefaultTenant, peek, peek.Steps)
	require.NoError(t, err)
	rows, err := machine.NewSteps(peek.Steps, 0)
	require.NoError(t, err)
	adm.gate(rows)
	require.Equal(t, rbtype.GateHumanConfirm, rows[0].Gate)
	require.Equal(t, rbtype.GateNone, rows[1].Gate)
	require.Len(t, adm.events, 1)
	require.Equal(t, "p", adm.events[0].StepKey)
	require.JSONEq(t, `{"rule":"default.gate","pattern":"read_only","tag":"read_only","policy_hash":"`+pol.Tenant(DefaultTenant).Hash()+
		`","reason":"verb m.peek is tagged read_only, which default.gate holds for a person"}`, string(adm.events[0].Data))
}

// TestAdmissionRunsEveryV14Form: every form of v1.4 runs on this engine
// (docs/design/language.md v1.4), so a plan that uses one is admitted;
// none is refused as a form the daemon compiles but does not run.
func TestAdmissionRunsEveryV14Form(t *testing.T) {
	cat := machineCatalogue(t)
	e := &Engine{cfg: Config{Catalogue: cat}}
	for _, src := range []string{
		`(m.echo :v 1 :as @a) (m.echo :v (default @a.v 1))`,
		`(m.echo :v 1 :as @a :on-failure "continue") (m.echo :v 2 :when (!= (status @a) "succeeded"))`,
		`(m.echo :v 1 :on-failure {"BUDGET_EXCEEDED" "abort" :default "continue"})`,
		`(m.echo :v 1 :gate "human_confirm" :approvers "compliance")`,
		`(m.echo :env "prod" :as @a) (m.echo :v 1 :gate-when (= @a.env "prod"))`,
		`(m.wait :who "ada" :timeout-result {:decision "revoke"})`,
		`(m.wait-remind :who "dpo")`,
		`(m.echo :v 1 :as @l) (for-each @l.users :as @u (m.wait :who @u :parallel 2))`,
	} {
		plan, diags := compiler.CompileSource("a.rbk", []byte(src), cat)
		require.False(t, diags.HasErrors(), "%s: %v", src, diags)
		_, err := e.admit(context.Background(), DefaultTenant, plan, plan.Steps)
		require.NoError(t, err, "%s runs", src)
	}
}
