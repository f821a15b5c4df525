package builtin_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/handler"
)

// TestTheCatalogueAndTheImplementationsAgree: every built-in the compiler
// is told about (Specs) has an implementation, and nothing runs that the
// compiler does not know; a spec that claims a dry run has a handler that
// can make one, and one that does not claim it has none (V031 and the
// rehearsal rely on the claim).
func TestTheCatalogueAndTheImplementationsAgree(t *testing.T) {
	impls := builtin.Handlers(builtin.Deps{})
	var specNames []string
	for _, s := range builtin.Specs() {
		specNames = append(specNames, s.Name)
		impl, ok := impls[s.Name]
		require.True(t, ok, "%s is declared but has no implementation", s.Name)
		_, canDryRun := impl.(handler.DryRunner)
		require.Equal(t, s.DryRun, canDryRun, "%s: the spec's DryRun and the implementation disagree", s.Name)
	}
	require.Equal(t, slices.Sorted(maps.Keys(impls)), slices.Sorted(slices.Values(specNames)))
}
