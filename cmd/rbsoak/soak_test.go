package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSoak runs a short soak against an rbd built from this tree. It is
// skipped unless RBSOAK_DURATION is set (a Go duration, such as 60s): a
// soak takes minutes of both cores, too much for every `make test`.
// RBSOAK_SEED repeats a run.
func TestSoak(t *testing.T) {
	env := os.Getenv("RBSOAK_DURATION")
	if env == "" {
		t.Skip("set RBSOAK_DURATION (e.g. 60s) to run a soak; make soak runs a longer one")
	}
	duration, err := time.ParseDuration(env)
	require.NoError(t, err, "RBSOAK_DURATION")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RBSOAK_SEED"); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "RBSOAK_SEED")
	}
	bin := filepath.Join(t.TempDir(), "rbd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/runbookdev/runbook/cmd/rbd").CombinedOutput()
	require.NoError(t, err, string(out))

	o := options{rbd: bin, duration: duration, seed: seed, workers: 3, rate: 4, faultGap: 4 * time.Second,
		settle: 3 * time.Minute, faults: faultKinds, out: filepath.Join(os.TempDir(), "rbsoak-failures"), maxRSS: 512 << 20}
	rep, err := soak(context.Background(), o)
	require.NoError(t, err)
	var b strings.Builder
	rep.print(&b)
	t.Log(b.String())
	require.Empty(t, rep.Violations, "seed %d; logs in %s", seed, rep.Kept)
	require.NotZero(t, rep.Effects.Effects, "the soak made effects")
}
