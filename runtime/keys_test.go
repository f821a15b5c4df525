package runtime

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// TestKeysAcrossALineage: docs/design/semantics.md section 6. A regenerated runbook's
// steps that regenerate (pure or stable, no outside effect) get new keys
// and seeds; every other step keeps its root's key, so a send that
// happened returns its receipt; and nothing depends on the runbook's own
// id once it has a root.
func TestKeysAcrossALineage(t *testing.T) {
	root := &driver.Runbook{ID: uuid.New()}
	child := &driver.Runbook{ID: uuid.New(), Lineage: driver.Lineage{Root: root.ID, Parent: root.ID, Generation: 1}}
	grandchild := &driver.Runbook{ID: uuid.New(), Lineage: driver.Lineage{Root: root.ID, Parent: child.ID, Generation: 2}}
	draft := &verbs.Execution{Determinism: rbtype.DeterminismStable, SideEffects: rbtype.SideEffectsNone,
		Idempotency: verbs.Idempotency{Scope: rbtype.ScopeRunbookStep}}
	send := &verbs.Execution{Determinism: rbtype.DeterminismStable, SideEffects: rbtype.SideEffectsExternalCall,
		Idempotency: verbs.Idempotency{Scope: rbtype.ScopeRunbookStep}}
	lookup := &verbs.Execution{SideEffects: rbtype.SideEffectsNone, Idempotency: verbs.Idempotency{Scope: rbtype.ScopeRunbookStep}}
	args := map[string]any{"to": "ada"}
	key := func(rb *driver.Runbook, exec *verbs.Execution) string {
		return machine.IdempotencyKey(machine.OriginOf(rb, exec), "s", "v.x", exec.Idempotency, args)
	}

	require.True(t, machine.Regenerates(draft))
	require.False(t, machine.Regenerates(send), "an external call never regenerates, whatever its determinism")
	require.False(t, machine.Regenerates(lookup), "determinism defaults to external")

	// A draft regenerates: each generation its own key.
	require.NotEqual(t, key(root, draft), key(child, draft))
	require.NotEqual(t, key(child, draft), key(grandchild, draft))
	// The send keeps the root's key in every generation.
	require.Equal(t, key(root, send), key(child, send))
	require.Equal(t, key(root, send), key(grandchild, send))
	require.Equal(t, key(root, lookup), key(child, lookup))

	// An original's keys are what they were before lineages: the material
	// names its own id, and no generation.
	legacy := machine.IdempotencyKey(machine.KeyOrigin{Root: root.ID}, "s", "v.x", send.Idempotency, args)
	require.Equal(t, legacy, key(root, send))

	// Seeds: the same for the same attempt, whichever runbook of the
	// lineage computes it (a replay); new for the next attempt; new for a
	// regenerated draft, the send's unchanged.
	seed := func(rb *driver.Runbook, exec *verbs.Execution, attempt int) uint64 {
		return machine.StepSeed(machine.OriginOf(rb, exec), "s", attempt)
	}
	require.Equal(t, seed(root, send, 1), seed(grandchild, send, 1))
	require.NotEqual(t, seed(root, send, 1), seed(root, send, 2))
	require.NotEqual(t, seed(root, send, 1), machine.StepSeed(machine.OriginOf(root, send), "t", 1), "the step key enters the seed")
	require.NotEqual(t, seed(root, draft, 1), seed(child, draft, 1))

	// Retry jitter follows the seed: two runbooks of a lineage whose rows
	// have different ids wait the same.
	r := verbs.Retry{MaxAttempts: 5, Backoff: rbtype.BackoffExponential, BaseDelay: verbs.MustDuration("PT10S"), MaxDelay: verbs.MustDuration("PT5M")}
	require.Equal(t, machine.RetryDelay(r, seed(root, send, 2), 2), machine.RetryDelay(r, seed(child, send, 2), 2))
}

// Runbook ids and correlation keys are keyed hashes (docs/reliability.md): another
// derivation key gives other ids, the same key the same ids (what dedupes
// repeats), and neither is the public UUIDv5 rbd derived before.
func TestDerivedIdsNeedTheKey(t *testing.T) {
	one, err := machine.NewDerivation([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	other, err := machine.NewDerivation([]byte("fedcba9876543210fedcba9876543210"))
	require.NoError(t, err)
	_, err = machine.NewDerivation([]byte("short"))
	require.ErrorContains(t, err, "32 are needed")

	require.Equal(t, one.RunbookID("tenant:acme:K"), one.RunbookID("tenant:acme:K"))
	require.NotEqual(t, one.RunbookID("tenant:acme:K"), other.RunbookID("tenant:acme:K"))
	require.NotEqual(t, uuid.NewSHA1(machine.NamespaceRunbook, []byte("tenant:acme:K")), one.RunbookID("tenant:acme:K"))
	require.Equal(t, uuid.Version(8), one.RunbookID("x").Version())

	rb := one.RunbookID("tenant:acme:K")
	inv1, key1 := one.InvocationIDs(rb, "w", 1)
	inv2, key2 := one.InvocationIDs(rb, "w", 2)
	_, otherKey := other.InvocationIDs(rb, "w", 1)
	require.NotEqual(t, inv1, inv2)
	require.NotEqual(t, key1, key2, "each attempt its own key")
	require.NotEqual(t, key1, otherKey)
	require.NotEqual(t, inv1.String(), key1)
	again, keyAgain := one.InvocationIDs(rb, "w", 1)
	require.Equal(t, inv1, again)
	require.Equal(t, key1, keyAgain)
}
