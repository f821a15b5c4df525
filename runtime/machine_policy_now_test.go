package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// A stricter policy later applies before a step's next attempt
// (docs/design/semantics.md section 17): a max_risk lowered below a
// waiting step's risk fails it POLICY_DENIED before it starts, and its
// failure mode (abort) ends the runbook; a relaxation changes no frozen
// gate.
func TestAStricterPolicyFailsTheNextAttempt(t *testing.T) {
	f := newFixture(t, `(m.echo :v "a" :as @a) (m.wire :after @a :as @w)`, nil)
	_, calls := f.advance()
	// The policy in force now refuses high risk.
	f.pol = UnattendedPolicy("  max_risk: medium\n")
	_, calls = f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": "a"}))
	require.Empty(t, calls)
	require.Equal(t, rbtype.StepWaitingApproval, f.step("w").Status, "its frozen gate (high risk) holds")
	// Approved: its attempt would start now, under the policy in force.
	w, calls, err := f.command(&machine.DecideGate{Step: "w", Approve: true, By: "ops"})
	require.NoError(t, err)
	require.Empty(t, calls, "the wire never starts")
	s := f.step("w")
	require.Equal(t, rbtype.StepFailed, s.Status)
	require.Equal(t, rbtype.CodePolicyDenied, s.ErrorCode)
	require.Contains(t, s.ErrorMessage, "the policy in force now refuses this step (default.max_risk)")
	require.Zero(t, s.Attempt)
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Empty(t, w.Attempts, "no attempt is recorded")

	// A relaxation: a gate frozen at admission stays.
	g := newFixture(t, `(m.send :to "x" :gate "human_confirm" :as @s)`, nil)
	g.pol = UnattendedPolicy("  deny: []\n")
	_, calls = g.advance()
	require.Empty(t, calls)
	require.Equal(t, rbtype.StepWaitingApproval, g.step("s").Status)
}
