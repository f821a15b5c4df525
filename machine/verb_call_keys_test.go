package machine

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// TestVerbCallKeyFollowsTheCalledVerb: an escalation's or a reminder's key
// is its own verb's, never the attempt's: the same page for the same step
// has one key however often the step times out; key_fields choose what
// makes two pages the same; the global scope shares a key across steps and
// runbooks; a reminder and an escalation of one step never share one.
func TestVerbCallKeyFollowsTheCalledVerb(t *testing.T) {
	a, b := KeyOrigin{Root: uuid.New()}, KeyOrigin{Root: uuid.New()}
	step := verbs.Idempotency{Scope: rbtype.ScopeRunbookStep}
	args := map[string]any{"incident": "inc-7", "note": "timed out at attempt 1"}

	first := VerbCallKey(a, "ack", PurposeEscalate, "ops.page", step, args)
	require.Equal(t, first, VerbCallKey(a, "ack", PurposeEscalate, "ops.page", step, args), "deterministic")
	require.NotEqual(t, first, VerbCallKey(a, "ack", PurposeRemind, "ops.page", step, args), "a reminder is another call")
	require.NotEqual(t, first, VerbCallKey(a, "other", PurposeEscalate, "ops.page", step, args), "another step")
	require.NotEqual(t, first, VerbCallKey(b, "ack", PurposeEscalate, "ops.page", step, args), "another lineage")

	byIncident := verbs.Idempotency{Scope: rbtype.ScopeRunbookStep, KeyFields: []string{"incident"}}
	again := map[string]any{"incident": "inc-7", "note": "timed out at attempt 2"}
	require.Equal(t, VerbCallKey(a, "ack", PurposeEscalate, "ops.page", byIncident, args),
		VerbCallKey(a, "ack", PurposeEscalate, "ops.page", byIncident, again), "the key fields decide")
	require.NotEqual(t, VerbCallKey(a, "ack", PurposeEscalate, "ops.page", step, args),
		VerbCallKey(a, "ack", PurposeEscalate, "ops.page", step, again), "without key fields, every argument does")

	global := verbs.Idempotency{Scope: rbtype.ScopeGlobal, KeyFields: []string{"incident"}}
	require.Equal(t, VerbCallKey(a, "ack", PurposeEscalate, "idp.revoke", global, args),
		VerbCallKey(b, "other", PurposeEscalate, "idp.revoke", global, again), "a global key is one effect, whoever asks")
	require.Equal(t, VerbCallKey(a, "ack", PurposeEscalate, "ops.page", verbs.Idempotency{}, args), first, "no scope is runbook_step")
}

// TestInDoubtMovesAreGuarded: the moves in and out of in_doubt are the
// diagram's, and a step in doubt is not final.
func TestInDoubtMovesAreGuarded(t *testing.T) {
	require.True(t, StepMoveAllowed(rbtype.StepRunning, rbtype.StepInDoubt))
	for _, to := range []rbtype.StepStatus{rbtype.StepComplete, rbtype.StepPending, rbtype.StepFailed, rbtype.StepCancelled} {
		require.True(t, StepMoveAllowed(rbtype.StepInDoubt, to), to)
	}
	require.False(t, StepMoveAllowed(rbtype.StepInDoubt, rbtype.StepRunning), "never called again without a person")
	require.False(t, StepMoveAllowed(rbtype.StepInDoubt, rbtype.StepReady))
	require.False(t, rbtype.StepInDoubt.Done())
}
