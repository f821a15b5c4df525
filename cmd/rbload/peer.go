package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/runbookdev/runbook/durable"
)

// The peers, River and DBOS Transact, are measured through runners of
// their own (cmd/rbload/rbriver, cmd/rbload/rbdbos): modules apart, so
// that their dependencies stay out of this one's graph, run as processes
// that print their figures as JSON.

// counted runs fn, a peer's measured process (River's burn-down, DBOS's
// chains), and returns PostgreSQL's counters over it and the CPU
// PostgreSQL used meanwhile (zero for a server on another machine): read around the
// process alone, as they are around rbd's worker.
func (l *lab) counted(ctx context.Context, fn func() error) (durable.DatabaseStats, time.Duration, error) {
	before, err := l.stats.DatabaseStats(ctx)
	if err != nil {
		return durable.DatabaseStats{}, 0, err
	}
	pgBefore, err := l.postgresCPU()
	if err != nil {
		return durable.DatabaseStats{}, 0, err
	}
	if err := fn(); err != nil {
		return durable.DatabaseStats{}, 0, err
	}
	// As after rbd's worker: PostgreSQL publishes a backend's counters at
	// most once a second, and the process's backends have exited.
	time.Sleep(1500 * time.Millisecond)
	pgAfter, err := l.postgresCPU()
	if err != nil {
		return durable.DatabaseStats{}, 0, err
	}
	after, err := l.stats.DatabaseStats(ctx)
	if err != nil {
		return durable.DatabaseStats{}, 0, err
	}
	return after.Sub(before), pgAfter - pgBefore, nil
}

// runPeer runs one command of a peer's runner (bin/rbriver, bin/rbdbos)
// on a schema of the lab's PostgreSQL and returns what it printed on
// standard output and how it exited.
func (l *lab) runPeer(ctx context.Context, runner, command, schema string, args ...string) ([]byte, *os.ProcessState, error) {
	args = append([]string{command, "--database-url", l.url, "--schema", schema}, args...)
	cmd := exec.CommandContext(ctx, runner, args...)
	var stdout bytes.Buffer
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, logs
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(runner), command, err, logs.tail(20))
	}
	return stdout.Bytes(), cmd.ProcessState, nil
}
