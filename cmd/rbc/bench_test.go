package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/examples/runbooks/synthetic"
)

// BenchmarkRbcCompile measures `rbc compile --verbs DIR FILE.rbk -o plan.json`
// end to end, in process: reading the verbs and the runbook, parsing,
// checking, freezing, rendering and writing the plan, with rbc's GC setting.
// Targets (BENCHMARKS.md): 100k steps in at most 2 s on the 2-core machine,
// and t(100k)/t(10k) at most 12.
func BenchmarkRbcCompile(b *testing.B) {
	tuneGC()
	dir := b.TempDir()
	verbs := filepath.Join(dir, "bench.yaml")
	require.NoError(b, os.WriteFile(verbs, []byte(synthetic.Verbs), 0o644))
	for _, n := range []int{1000, 10000, 100000} {
		src := filepath.Join(dir, fmt.Sprintf("bench%d.rbk", n))
		require.NoError(b, os.WriteFile(src, synthetic.Runbook(n), 0o644))
		out := filepath.Join(dir, fmt.Sprintf("plan%d.json", n))
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				if status := run([]string{"compile", "--verbs", verbs, src, "-o", out}, io.Discard, io.Discard); status != 0 {
					b.Fatalf("status %d", status)
				}
			}
		})
	}
}
