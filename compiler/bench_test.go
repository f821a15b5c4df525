package compiler

import (
	"fmt"
	"testing"

	"github.com/dominikbraun/graph"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/examples/runbooks/synthetic"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

func benchCatalogue(tb testing.TB) *registry.Catalogue {
	defs, diags := verbs.Parse("bench.yaml", []byte(synthetic.Verbs))
	require.Empty(tb, diags)
	cat, diags := registry.New(defs, registry.NewHandlers())
	require.Empty(tb, diags)
	return cat
}

// BenchmarkCompile measures Compile alone, on parsed generated runbooks,
// plan rendering included.
func BenchmarkCompile(b *testing.B) {
	cat := benchCatalogue(b)
	for _, n := range []int{1000, 10000, 100000} {
		f, diags := lang.Parse("bench.rbk", synthetic.Runbook(n))
		require.Empty(b, diags)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				plan, diags := Compile([]*lang.File{f}, cat)
				if plan == nil {
					b.Fatal(diags)
				}
				_ = plan.JSON()
			}
		})
	}
}

// BenchmarkGraphLibrary measures what dominikbraun/graph costs on the DAG
// of a generated runbook, to show why compile orders steps itself and
// keeps the library for cycle analysis. StableTopologicalSort is quadratic,
// so it is measured at small sizes only.
func BenchmarkGraphLibrary(b *testing.B) {
	build := func(n int) graph.Graph[int, int] {
		g := graph.New(graph.IntHash, graph.Directed())
		for i := 1; i <= n; i++ {
			_ = g.AddVertex(i)
		}
		for i := 2; i <= n; i++ {
			_ = g.AddEdge(i-1, i)
			if back := (i*7919)%(i-1) + 1; back != i-1 {
				_ = g.AddEdge(back, i)
			}
		}
		return g
	}
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("build/steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				build(n)
			}
		})
		g := build(n)
		b.Run(fmt.Sprintf("AdjacencyMap/steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, _ = g.AdjacencyMap()
			}
		})
		b.Run(fmt.Sprintf("StronglyConnectedComponents/steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, _ = graph.StronglyConnectedComponents(g)
			}
		})
	}
	for _, n := range []int{1000, 4000} {
		g := build(n)
		b.Run(fmt.Sprintf("StableTopologicalSort/steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, _ = graph.StableTopologicalSort(g, func(x, y int) bool { return x < y })
			}
		})
	}
}

// BenchmarkParsePlan measures reading a compiled plan back, hash check
// included: what the daemon does with a submitted plan before it checks
// it against its catalogue.
func BenchmarkParsePlan(b *testing.B) {
	cat := benchCatalogue(b)
	for _, n := range []int{10000, 100000} {
		f, diags := lang.Parse("bench.rbk", synthetic.Runbook(n))
		require.Empty(b, diags)
		plan, diags := Compile([]*lang.File{f}, cat)
		require.NotNil(b, plan, diags)
		raw := plan.JSON()
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := ParsePlan(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
