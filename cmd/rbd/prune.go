package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
)

const pruneUsage = `Usage: rbd prune --finished-before AGE|TIME [flags]

Deletes the runbooks that finished (complete, failed, cancelled or
escalated, compensations included) before a time: AGE ago (720h) or an
RFC 3339 TIME (2026-01-02T15:04:05Z). Their steps, edges, events,
invocations, notifications and mutations go with them. Running runbooks
are never touched.

Action receipts of the runbook and runbook_step scopes go once they are
older than --receipt-window and no runbook of their lineage is left;
until then a resubmission of a pruned runbook finds them and repeats no
effect. Receipts of the global scope are kept for ever. Ledger rows (the
bill, and what budgets count) go once older than --ledger-retention.
It works in batches of 500, each a short transaction, beside a daemon.
On the embedded PostgreSQL (no --database-url) it connects to the server
a running rbd serve started on --data-dir, or starts it when none runs.
It refuses a database without rbd's tables, and a --data-dir that holds
no database: either would be the wrong one.
`

// pruneBatch is how many runbooks one transaction deletes: small enough
// that the locks and the cascade stay short under a running daemon.
const pruneBatch = 500

func runPrune(args []string, stdout, stderr io.Writer) int {
	var db databaseFlags
	var logs logFlags
	var before string
	var windows retentionFlags
	fs := cli.NewEnvFlags("rbd prune", pruneUsage, stderr)
	db.register(fs)
	db.attach = true
	logs.register(fs)
	windows.register(fs)
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
	if err := pruneable(ctx, d.store); err != nil {
		return cantRun(stderr, "%v", err)
	}
	opts := windows.options(cutoff, time.Now(), pruneBatch)
	var total driver.Pruned
	for {
		n, err := d.store.Prune(ctx, opts)
		total.Add(n)
		if err != nil {
			fmt.Fprintf(stderr, "rbd: pruned %s, then: %v\n", describePruned(total), err)
			return exitFailed
		}
		if n.Done() {
			break
		}
	}
	fmt.Fprintf(stdout, "pruned %s; finished before %s\n", describePruned(total), cutoff.UTC().Format(time.RFC3339))
	return exitOK
}

// pruneable refuses a database prune must not work on: one without rbd's
// tables in --schema (an empty database, most likely not the daemon's:
// another --data-dir, --database-url or --schema), and one whose tables
// are of another version.
func pruneable(ctx context.Context, store *durable.Store) error {
	status, err := store.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	if status.Current == 0 {
		return fmt.Errorf("schema %q of this database holds no rbd tables: it is empty, so there is nothing to prune; "+
			"give the --data-dir (or --database-url) and --schema of the rbd serve whose history to prune", store.Schema())
	}
	return schemaCurrent(ctx, store)
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

// retentionFlags are the windows of what outlives its runbook: receipts
// and the ledger (rbd prune, and rbd serve's --retention).
type retentionFlags struct {
	receiptWindow, ledgerRetention time.Duration
}

func (r *retentionFlags) register(fs *cli.EnvFlags) {
	fs.DurationVar(&r.receiptWindow, "receipt-window", 720*time.Hour,
		"how long the receipts of a pruned runbook's effects are kept (runbook and runbook_step scopes); 0 keeps them for ever")
	fs.Env("receipt-window", "RBD_RECEIPT_WINDOW")
	fs.DurationVar(&r.ledgerRetention, "ledger-retention", 9600*time.Hour,
		"how long ledger rows (the bill) are kept; 0 keeps them for ever")
	fs.Env("ledger-retention", "RBD_LEDGER_RETENTION")
}

// options are the prune options for runbooks finished before cutoff.
func (r *retentionFlags) options(cutoff, now time.Time, limit int) driver.PruneOptions {
	o := driver.PruneOptions{FinishedBefore: cutoff, Limit: limit}
	if r.receiptWindow > 0 {
		o.ReceiptsBefore = now.Add(-r.receiptWindow)
	}
	if r.ledgerRetention > 0 {
		o.LedgerBefore = now.Add(-r.ledgerRetention)
	}
	return o
}

// describePruned says what a prune deleted, runbooks first.
func describePruned(p driver.Pruned) string {
	count := func(n int64, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	return count(p.Runbooks, "runbook", "runbooks") + " (" + strings.Join([]string{
		count(p.Steps, "step", "steps"), count(p.Edges, "edge", "edges"), count(p.Events, "event", "events"),
		count(p.Invocations, "invocation", "invocations"), count(p.Notifications, "notification", "notifications"),
		count(p.Mutations, "mutation", "mutations"),
	}, ", ") + "), " + count(p.Receipts, "receipt", "receipts") + ", " + count(p.Attempts, "ledger row", "ledger rows")
}
