package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runbookdev/runbook/examples/runbooks/synthetic"
)

// compileScaling times `rbc compile` on generated runbooks of growing
// size (the real binary, start to exit), and its peak memory.
func (l *lab) compileScaling(ctx context.Context, r *report) error {
	dir := filepath.Join(l.dir, "compile")
	if err := os.MkdirAll(filepath.Join(dir, "verbs"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "verbs", "bench.yaml"), []byte(synthetic.Verbs), 0o644); err != nil {
		return err
	}
	for _, n := range l.o.compileSizes {
		src := filepath.Join(dir, fmt.Sprintf("gen%d.rbk", n))
		if err := os.WriteFile(src, synthetic.Runbook(n), 0o644); err != nil {
			return err
		}
		figures := runs{}
		for range max(l.o.runs, 3) {
			cmd := exec.CommandContext(ctx, l.o.rbc, "compile", "--verbs", filepath.Join(dir, "verbs"), src, "-o", filepath.Join(dir, "plan.json"))
			began := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(began)
			if err != nil {
				return fmt.Errorf("rbc compile of %d steps: %v\n%s", n, err, out)
			}
			figures.add("ms", ms(took))
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				figures.add("maxrss", float64(ru.Maxrss)/1024) // kB → MiB
			}
		}
		row := r.add(fmt.Sprintf("compile %s steps (rbc compile, wall)", withCommas(int64(n))), figures.median("ms"), "ms").
			note("peak RSS %s MiB; %s", format(figures.median("maxrss")), figures.spread("ms"))
		if n == 100000 {
			row.atMost(2000, "≤ 2 s")
		}
		logf("compile %d steps: %.0f ms", n, figures.median("ms"))
	}
	return nil
}
