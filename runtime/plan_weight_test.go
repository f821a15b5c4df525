package runtime

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
)

// heapOf is how much live heap what make returns holds, with the
// collector run before and after.
func heapOf(make func() any) uint64 {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	kept := make()
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	goruntime.KeepAlive(kept)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// A decoded plan the cache keeps weighs, as --plan-cache-bytes counts it,
// at least what it holds in memory (docs/daemon.md, Limits): its steps
// decoded and the machine's index of its loops. Counted low, the cache
// would hold more than its budget: a plan of nested lists (90 of 100)
// took 3.7 times its JSON, which a weight of 2 counted as 2.
func TestAPlansWeightIsWhatItHolds(t *testing.T) {
	cat := machineCatalogue(t)
	var flat strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&flat, "(m.echo :v %d)\n", i)
	}
	flatPlan, diags := compiler.CompileSource("flat.rbk", []byte(flat.String()), cat)
	require.False(t, diags.HasErrors(), diags.Error())

	nested, diags := compiler.CompileSource("nested.rbk", []byte(`(m.echo :v $hosts :as @a)
(for-each @a.v :as @h
  (for-each @h.ports :as @p (m.echo :v @p)))`), cat)
	require.False(t, diags.HasErrors(), diags.Error())
	outer, err := nested.Expand("h", 90)
	require.NoError(t, err)
	var inner []compiler.LoopSize
	for i := range 90 {
		inner = append(inner, compiler.LoopSize{Key: fmt.Sprintf("p[%d]", i), N: 100})
	}
	grown, errs := outer.ExpandEachWithin(inner, 0)
	for _, err := range errs {
		require.NoError(t, err)
	}

	for name, raw := range map[string][]byte{"3,000 steps": flatPlan.JSON(), "90 lists of 100": grown.JSON()} {
		c := newPlanCache(10, 1<<40, nil)
		held := heapOf(func() any {
			info, err := c.decode("h", raw)
			require.NoError(t, err)
			return info
		})
		t.Logf("%s: %d KB of JSON, %d KB held, weighed %d KB (x%.1f held)", name, len(raw)>>10, held>>10, (len(raw)*planWeight)>>10, float64(held)/float64(len(raw)))
		require.LessOrEqual(t, held, uint64(len(raw)*planWeight), "%s: the cache counts less than the plan holds", name)
	}
}
