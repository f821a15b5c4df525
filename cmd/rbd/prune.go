package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

const pruneUsage = `Usage: rbd prune --finished-before AGE|TIME [flags]

Deletes the runbooks that finished (complete, failed, cancelled or
escalated, compensations included) before a time: AGE ago (720h) or an
RFC 3339 TIME (2026-01-02T15:04:05Z). Their steps, events, invocations and
notifications go with them; action receipts stay. Running runbooks are
never touched. A pruned runbook's Idempotency-Key is free again.
`

// pruneBatch is how many runbooks one transaction deletes: small enough
// that the locks and the cascade stay short under a running daemon.
const pruneBatch = 500

func runPrune(args []string, stdout, stderr io.Writer) int {
	var db databaseFlags
	var logs logFlags
	var before string
	fs := cli.NewEnvFlags("rbd prune", pruneUsage, stderr)
	db.register(fs)
	logs.register(fs)
	fs.StringVar(&before, "finished-before", "", "prune runbooks finished before this age (720h) or RFC 3339 time; required")
	if status, ok := parseNoArgs(fs, args, "prune", stderr); !ok {
		return status
	}
	cutoff, err := pruneCutoff(before, time.Now())
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	log := logs.logger(stderr)
	ctx := context.Background()
	d, err := db.open(ctx, log)
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	defer d.close(log)
	if err := schemaCurrent(ctx, d.store); err != nil {
		return cantRun(stderr, "%v", err)
	}
	var total int64
	for {
		n, err := d.store.PruneFinished(ctx, cutoff, pruneBatch)
		total += n
		if err != nil {
			fmt.Fprintf(stderr, "rbd: pruned %d runbooks, then: %v\n", total, err)
			return exitFailed
		}
		if n < pruneBatch {
			break
		}
	}
	noun := "runbooks"
	if total == 1 {
		noun = "runbook"
	}
	fmt.Fprintf(stdout, "pruned %d %s finished before %s\n", total, noun, cutoff.UTC().Format(time.RFC3339))
	return exitOK
}

// pruneCutoff reads --finished-before: an age before now, or a time.
func pruneCutoff(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("--finished-before is required: an age (720h) or an RFC 3339 time")
	}
	if age, err := time.ParseDuration(s); err == nil {
		if age < 0 {
			return time.Time{}, fmt.Errorf("--finished-before %s: an age is not negative", s)
		}
		return now.Add(-age), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--finished-before %q is neither an age (720h) nor an RFC 3339 time", s)
	}
	return t, nil
}
