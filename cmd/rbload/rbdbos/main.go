// Command rbdbos runs DBOS Transact for Go (github.com/dbos-inc/dbos-transact-golang),
// a durable workflow library on PostgreSQL, on the same PostgreSQL as rbd,
// so that `make bench` can set rbd's figures beside a workflow engine's
// measured in the same run (BENCHMARKS.md). rbload runs it as a subprocess; it
// is a module of its own so that DBOS stays out of the daemon's module
// graph.
//
//	rbdbos setup  --database-url URL --schema S
//	rbdbos chain  --database-url URL --schema S --workflows 1000 --steps 10 --in-flight 200 --max-conns 32
//	rbdbos resume --database-url URL --schema S --workflows 1000 --rate 200 --max-conns 32
//
// setup creates the schema and runs DBOS's migrations there (dbos.Migrate),
// so that the measured processes start on a migrated system database and
// PostgreSQL's counters around them hold no DDL. chain runs workflows of
// no-op RunAsStep steps in a line and reports steps/s; resume starts
// workflows that wait in Recv, wakes each with a Send at a steady rate and
// times each from the Send to its next step's start. chain and resume
// print their figures as one JSON object on standard output; DBOS's own
// logs go to standard error.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the flags of all three commands; each reads those it needs.
type options struct {
	databaseURL string
	schema      string
	workflows   int
	steps       int
	inFlight    int
	rate        int
	maxConns    int
}

func main() {
	if len(os.Args) < 2 {
		fatalf("usage: rbdbos setup|chain|resume [flags]")
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet("rbdbos "+cmd, flag.ExitOnError)
	o := options{}
	fs.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL to run DBOS on")
	fs.StringVar(&o.schema, "schema", "", "the schema of DBOS's system tables (created by setup)")
	fs.IntVar(&o.workflows, "workflows", 1000, "chain: workflows run; resume: workflows waiting in Recv")
	fs.IntVar(&o.steps, "steps", 10, "chain: no-op steps per workflow")
	fs.IntVar(&o.inFlight, "in-flight", 200, "chain: workflows running at once")
	fs.IntVar(&o.rate, "rate", 200, "resume: Sends per second")
	fs.IntVar(&o.maxConns, "max-conns", 32, "the system database pool's maximum connections")
	_ = fs.Parse(os.Args[2:])
	if o.databaseURL == "" || o.schema == "" {
		fatalf("--database-url and --schema are required")
	}
	if o.workflows < 1 || o.steps < 1 || o.inFlight < 1 || o.rate < 1 || o.maxConns < 2 {
		fatalf("--workflows, --steps, --in-flight and --rate must be at least 1, --max-conns at least 2")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var out any
	var err error
	switch cmd {
	case "setup":
		err = setup(ctx, o)
	case "chain":
		out, err = chain(ctx, o)
	case "resume":
		out, err = resume(ctx, o)
	default:
		fatalf("unknown command %q: setup, chain or resume", cmd)
	}
	if err != nil {
		fatalf("%s: %v", cmd, err)
	}
	if out != nil {
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			fatalf("%v", err)
		}
	}
}

// logger sends DBOS's logs to standard error, warnings and worse only:
// standard output carries the figures.
var logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s rbdbos: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rbdbos: "+format+"\n", args...)
	os.Exit(1)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
