package runtime

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/machine"
)

// The plan cache keeps plans within its byte budget, the least recently
// used going first, and never keeps a plan larger than the whole budget
// (docs/reliability.md: one large plan once stayed at 430 MB).
func TestPlanCacheIsBoundedInBytes(t *testing.T) {
	cat := machineCatalogue(t)
	raw := func(i int) (string, []byte) {
		plan, diags := compiler.CompileSource("p.rbk", []byte(fmt.Sprintf(`(m.echo :v %d)`, i)), cat)
		require.False(t, diags.HasErrors())
		return plan.PlanHash, plan.JSON()
	}
	_, one := raw(0)
	budget := int64(len(one)) * planWeight * 3 // three plans' worth
	c := newPlanCache(100, budget, nil)
	var hashes []string
	for i := 0; i < 10; i++ {
		h, b := raw(i)
		hashes = append(hashes, h)
		_, err := c.decode(h, b)
		require.NoError(t, err)
		bytes, n := c.size()
		require.LessOrEqual(t, bytes, budget)
		require.LessOrEqual(t, n, 3)
	}
	_, kept := c.lookup(hashes[9])
	require.True(t, kept, "the newest stays")
	_, kept = c.lookup(hashes[0])
	require.False(t, kept, "the oldest went")

	small := newPlanCache(100, int64(len(one)), nil) // less than one plan weighs
	info, err := small.decode(hashes[0], one)
	require.NoError(t, err)
	require.NotNil(t, info, "decoded all the same")
	_, kept = small.lookup(hashes[0])
	require.False(t, kept)
}

// A plan an expansion grew is kept weighed by its stored size, as a
// decoded one is: it counts against the budget, and one larger than the
// budget is not kept.
func TestPlanCacheWeighsGrownPlans(t *testing.T) {
	plan, diags := compiler.CompileSource("p.rbk", []byte(`(m.echo :v $hosts :as @a)
(for-each @a.v :as @h (m.echo :v @h :as @each))`), machineCatalogue(t))
	require.False(t, diags.HasErrors())
	grown, err := plan.Expand("h", 50)
	require.NoError(t, err)
	raw := grown.JSON()
	c := newPlanCache(100, int64(len(raw))*planWeight, nil)
	c.keep(grown.PlanHash, machine.NewPlanInfo(grown), len(raw))
	bytes, n := c.size()
	require.Equal(t, int64(len(raw))*planWeight, bytes)
	require.Equal(t, 1, n)

	small := newPlanCache(100, int64(len(raw)), nil)
	small.keep(grown.PlanHash, machine.NewPlanInfo(grown), len(raw))
	bytes, n = small.size()
	require.Zero(t, bytes)
	require.Zero(t, n)
}
