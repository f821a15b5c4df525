package lang

import (
	"fmt"
	"testing"

	"github.com/runbookdev/runbook/examples/runbooks/synthetic"
)

// BenchmarkParse measures Parse with the shape cache, and with participle
// parsing every call (maxShapes = 0): the figures that justify the cache
// (shapes.go, BENCHMARKS.md).
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		src := synthetic.Runbook(n)
		for _, limit := range []int{maxShapes, 0} {
			name := fmt.Sprintf("steps=%d/shape-cache", n)
			if limit == 0 {
				name = fmt.Sprintf("steps=%d/participle-only", n)
			}
			b.Run(name, func(b *testing.B) {
				defer func(saved int) { maxShapes = saved }(maxShapes)
				maxShapes = limit
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					if _, diags := Parse("bench.rbk", src); len(diags) > 0 {
						b.Fatal(diags)
					}
				}
			})
		}
	}
}

func TestBenchgenRunbookParses(t *testing.T) {
	f, diags := Parse("gen.rbk", synthetic.Runbook(50))
	if len(diags) > 0 || len(f.Calls) != 50 {
		t.Fatalf("%d calls, %v", len(f.Calls), diags)
	}
}
