package runtime_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// A mistyped runbook id or step key is NOT_FOUND with the close ones, as
// rbc suggests names (docs/daemon.md: `rbd approve ID aproval`).
func TestNotFoundSuggestsWhatWasMeant(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.approve :v "x" :as @approval)`, nil)
	b.waitState(t, id, "awaiting_approval")

	typo := []byte(id.String())
	typo[3] = map[bool]byte{true: '1', false: '0'}[typo[3] == '0'] // one hex digit off
	mistyped := uuid.MustParse(string(typo))
	_, err := b.engine.Get(b.ctx, mistyped)
	require.ErrorIs(t, err, rbtype.ErrNotFound)
	require.ErrorContains(t, err, "no runbook "+mistyped.String()+" (did you mean "+id.String()+"?)")
	_, err = b.engine.Get(b.ctx, uuid.New())
	require.ErrorIs(t, err, rbtype.ErrNotFound)
	require.NotContains(t, err.Error(), "did you mean", "nothing close, nothing suggested")

	err = b.engine.Decide(b.ctx, id, "aproval", true, "ops", "")
	require.ErrorIs(t, err, rbtype.ErrNotFound)
	require.ErrorContains(t, err, `has no step "aproval" (did you mean "approval"?)`)
	require.NoError(t, b.engine.Decide(b.ctx, id, "approval", true, "ops", ""))
	b.waitStatus(t, id, rbtype.RunbookComplete)
}
