package compiler

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// oneAfterAnother expands loops as the runtime once did, one ExpandWithin
// after another on the plan the one before grew, a refused loop left as
// it is.
func oneAfterAnother(p *Plan, loops []LoopSize, maxBytes int) (*Plan, []error) {
	errs := make([]error, len(loops))
	for i, l := range loops {
		grown, err := p.ExpandWithin(l.Key, l.N, maxBytes)
		if err != nil {
			errs[i] = err
			continue
		}
		p = grown
	}
	return p, errs
}

// innerLoops is runtimeLoops with its outer loop expanded over k hosts,
// and the inner loops' sizes: host i has 3+i%4 ports, host 5 none.
func innerLoops(t testing.TB, k int) (*Plan, []LoopSize) {
	plan := compileLoops(t.(*testing.T), runtimeLoops)
	outer, err := plan.Expand("host", k)
	require.NoError(t, err)
	var sizes []LoopSize
	for i := range k {
		n := 3 + i%4
		if i == 5 {
			n = 0
		}
		sizes = append(sizes, LoopSize{Key: fmt.Sprintf("port[%d]", i), N: n})
	}
	return outer, sizes
}

// ExpandEachWithin makes, byte for byte, the plan that expanding its
// loops one after another makes, hash included; past --max-plan-bytes it
// refuses the same loops, and expands the others.
func TestExpandEachIsExpandingOneAfterAnother(t *testing.T) {
	outer, sizes := innerLoops(t, 12)
	cat := catalogueOf(t, "loops.yaml", loopVerbs)
	want, wantErrs := oneAfterAnother(outer, sizes, 0)
	got, errs := outer.ExpandEachWithin(sizes, 0)
	require.Equal(t, wantErrs, errs)
	require.Equal(t, string(want.JSON()), string(got.JSON()))
	require.Equal(t, want.PlanHash, got.PlanHash)
	require.Equal(t, got.Hash(), got.PlanHash)
	require.Empty(t, CheckPlan(got, cat))
	require.NotNil(t, got.Step("checked[11][5]"))

	// A bound the loops reach halfway: the same ones are refused.
	from, to := outer.encodedBytes(), want.encodedBytes()
	for _, limit := range []int{from + 100, (from + to) / 2, from + (to-from)*3/4} {
		want, wantErrs := oneAfterAnother(outer, sizes, limit)
		got, errs := outer.ExpandEachWithin(sizes, limit)
		refused := 0
		for i := range sizes {
			require.Equal(t, wantErrs[i] == nil, errs[i] == nil, "limit %d, loop %s: %v against %v", limit, sizes[i].Key, errs[i], wantErrs[i])
			if errs[i] != nil {
				// (The estimate in the message may differ by a few bytes:
				// it stops where it passes the bound, in map order.)
				require.True(t, errors.Is(errs[i], ErrPlanTooLarge), "%v", errs[i])
				refused++
			}
		}
		require.NotZero(t, refused, "limit %d refuses some", limit)
		if got == nil {
			require.Equal(t, outer.PlanHash, want.PlanHash, "none expanded either way")
			continue
		}
		require.Equal(t, want.PlanHash, got.PlanHash, "limit %d", limit)
	}

	// Decoded from storage, a plan is not sealed: its own steps count
	// all the same, so a bound the plan nearly fills refuses a loop that
	// would pass it.
	stored, err := DecodePlan(outer.JSON())
	require.NoError(t, err)
	_, errs = stored.ExpandEachWithin(sizes[:1], from+100)
	require.ErrorIs(t, errs[0], ErrPlanTooLarge)
	again, errs := stored.ExpandEachWithin(sizes, 0)
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, want.PlanHash, again.PlanHash)

	// Loops it cannot expand are named; the others expand.
	got, errs = outer.ExpandEachWithin([]LoopSize{{Key: "port"}, {Key: "nope"}, {Key: "port[1]", N: 2}, {Key: "port[1]", N: 2}, {Key: "host", N: 1}}, 0)
	require.ErrorContains(t, errs[0], `loop "port" is within loop "host"`)
	require.ErrorContains(t, errs[1], `the plan has no loop "nope"`)
	require.NoError(t, errs[2])
	require.ErrorContains(t, errs[3], `loop "port[1]" is expanded once`)
	require.NoError(t, errs[4]) // its templates stay; the machine never asks this twice
	require.NotNil(t, got.Step("checked[1][1]"))
	none, errs := outer.ExpandEachWithin([]LoopSize{{Key: "nope"}}, 0)
	require.Nil(t, none)
	require.Error(t, errs[0])
}

// bytesToExpand measures the bytes allocated by expanding k inner loops,
// all at once or one after another: the work, which a timed test would
// only blur on a shared machine. Bytes, not allocations: plan encoding
// and the effects' pass allocate per chunk and per plan rather than per
// step (BENCHMARKS.md, "Compile under 2 s"), so a count of allocations
// is mostly a pass's fixed cost and hardly sees how many steps it went
// over, where the bytes do.
func bytesToExpand(t *testing.T, k int, together bool) float64 {
	outer, sizes := innerLoops(t, k)
	expand := func() {
		if together {
			_, _ = outer.ExpandEachWithin(sizes, 1<<30)
		} else {
			_, _ = oneAfterAnother(outer, sizes, 1<<30)
		}
	}
	expand() // warm up, as testing.AllocsPerRun does
	const runs = 3
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		expand()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / runs
}

// The work of expanding a notification's nested lists grows with the plan
// they make (docs/reliability.md, "Under attack", issue 45's row 5):
// twice the inner loops, twice the bytes allocated at most, where one
// after another made about four times as many (each expansion copying and
// sealing the plan the ones before had grown).
func TestExpandingEachLoopIsLinear(t *testing.T) {
	small, large := bytesToExpand(t, 40, true), bytesToExpand(t, 80, true)
	t.Logf("together: %.0f bytes allocated for 40 loops, %.0f for 80 (x%.2f)", small, large, large/small)
	require.Less(t, large/small, 2.3, "twice the loops: linear work")

	small, large = bytesToExpand(t, 40, false), bytesToExpand(t, 80, false)
	t.Logf("one after another: %.0f bytes allocated for 40 loops, %.0f for 80 (x%.2f)", small, large, large/small)
	require.Greater(t, large/small, 3.0, "the measure sees the square of the lists")
}

// BenchmarkExpandNestedLists expands the inner loops of k elements, all at
// once and one after another.
func BenchmarkExpandNestedLists(b *testing.B) {
	for _, k := range []int{25, 50, 100} {
		for _, together := range []bool{true, false} {
			name := fmt.Sprintf("loops=%d/together=%v", k, together)
			b.Run(name, func(b *testing.B) {
				outer, sizes := innerLoops(&testing.T{}, k)
				b.ResetTimer()
				for range b.N {
					if together {
						_, _ = outer.ExpandEachWithin(sizes, 1<<30)
					} else {
						_, _ = oneAfterAnother(outer, sizes, 1<<30)
					}
				}
			})
		}
	}
}
