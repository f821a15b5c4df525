package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
)

// nestedLists is a source of nested for-each forms over lists written
// out: outer elements each carrying a big string, then a list of numbers
// for each of inner, nested; every instance of the innermost step reads
// the big string.
func nestedLists(outer, big int, inner ...int) string {
	var b strings.Builder
	b.WriteString("(for-each [")
	for i := 0; i < outer; i++ {
		fmt.Fprintf(&b, "{:n %d :big %q} ", i, strings.Repeat("b", big))
	}
	b.WriteString("] :as @h\n")
	for level, n := range inner {
		b.WriteString(strings.Repeat("  ", level+1) + "(for-each [")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%d ", i)
		}
		fmt.Fprintf(&b, "] :as @p%c\n", 'a'+level)
	}
	b.WriteString(strings.Repeat("  ", len(inner)+1) + "(t.echo :v @h.big)" + strings.Repeat(")", len(inner)+1) + "\n")
	return b.String()
}

// peakRSS is the most memory the process has held, from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(raw)
	require.NotNil(t, m)
	kb, err := strconv.ParseInt(string(m[1]), 10, 64)
	require.NoError(t, err)
	return kb << 10
}

// Under attack (docs/reliability.md), round 4, row 3: a 100 KB source of nested for-each forms over
// lists written out was built into a 1 GB plan in memory before
// --max-plan-bytes refused it (44 s of CPU, +2.8 GB). The plan's bytes
// (--max-plan-bytes) are now estimated while the lists are expanded, and
// refused before the instances are made: both sources are refused at once
// (E054), and the daemon's memory stays low. While two senders submit
// both again and again, another tenant's submission and signed
// notification are answered within 2 s and the daemon's memory stays
// under 1 GB (prober).
func TestNestedListsAreBoundedWhileExpanded(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", mcpAttackTokens)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", probeSecretFile(t, e))
	before := peakRSS(t, d.cmd.Process.Pid)

	var sources []string
	for _, c := range []struct {
		name       string
		outer, big int
		inner      []int
		says       string
	}{
		// 40,000 steps of 4 KB: 160 MB, past --max-steps (10,000) too.
		{"many", 4, 4000, []int{100, 100}, "bytes"},
		// 9,000 steps of 8 KB: 72 MB, within --max-steps, past --max-plan-bytes (8 MiB).
		{"bytes", 10, 8000, []int{900}, "bytes"},
	} {
		source := nestedLists(c.outer, c.big, c.inner...)
		require.Less(t, len(source), 256<<10)
		sources = append(sources, source)
		start := time.Now()
		status, answer, out := submitRaw(t, d, "tok-acme", apitype.SubmitRequest{Source: source})
		took := time.Since(start)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %.300s", c.name, out)
		require.Equal(t, "COMPILE_FAILED", answer.Code, "%s: refused when compiled, not after: %.300s", c.name, out)
		require.Contains(t, out, `"E054"`)
		require.Contains(t, out, c.says)
		require.Less(t, took, 2*time.Second, "%s: the refusal took %v", c.name, took)
		_, took = timedSubmit(t, d, "g-"+c.name)
		require.Less(t, took, 2*time.Second)
	}
	grew := peakRSS(t, d.cmd.Process.Pid) - before
	require.Less(t, grew, int64(100<<20), "the daemon's peak memory grew by %d MB", grew>>20)

	// The attack, sustained: two senders submit both sources over and
	// over while globex submits and notifies.
	probes := startProber(t, d, 8)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused, other := 0, []string{}
	acme := d.client("tok-acme")
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := acme.Submit(ctx, apitype.SubmitRequest{Source: sources[i%len(sources)]})
				cancel()
				var refusal *client.Error
				mu.Lock()
				if errors.As(err, &refusal) && refusal.StatusCode == http.StatusUnprocessableEntity && refusal.Code == "COMPILE_FAILED" {
					refused++
				} else {
					other = append(other, fmt.Sprint(err))
				}
				mu.Unlock()
			}
		}()
	}
	probes.await(t, 8)
	probes.halt()
	close(stop)
	wg.Wait()
	t.Logf("%d nested sources refused during the attack", refused)
	require.Empty(t, other, "a nested source was not refused when compiled")
	require.Positive(t, refused)
	probes.stop(t, 8)
}
