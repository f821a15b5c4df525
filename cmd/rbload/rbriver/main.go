// Command rbriver runs River (github.com/riverqueue/river), a PostgreSQL
// job queue, on the same PostgreSQL as rbd, so that `make bench` can set
// rbd's figures beside a plain queue's measured in the same run
// (docs/runtime.md). rbload runs it as a subprocess; it is a module of its own so
// that River stays out of the daemon's module graph.
//
//	rbriver setup   --database-url URL --schema S [--jobs N]
//	rbriver burn    --database-url URL --schema S --workers 1000 --fetch-cooldown 2ms
//	rbriver latency --database-url URL --schema S --jobs 1000 --rate 200 --fetch-cooldown 1ms
//
// setup creates the schema, runs River's migrations (rivermigrate) and
// inserts N no-op jobs; burn works every available job and exits; latency
// sets up its own schema, inserts jobs one at a time at a steady rate and
// times each from its insert's commit to its worker's start. burn and
// latency print their figures as one JSON object on standard output;
// River's own logs go to standard error. setup and burn are separate
// processes so that rbload can read PostgreSQL's counters and the
// worker's CPU time around the burn-down alone, as it does around rbd's
// worker.
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
	databaseURL       string
	schema            string
	jobs              int
	workers           int
	rate              int
	fetchCooldown     time.Duration
	fetchPollInterval time.Duration
	maxConns          int
}

func main() {
	if len(os.Args) < 2 {
		fatalf("usage: rbriver setup|burn|latency [flags]")
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet("rbriver "+cmd, flag.ExitOnError)
	o := options{}
	fs.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL to run River on")
	fs.StringVar(&o.schema, "schema", "", "the schema for River's tables (created if missing)")
	fs.IntVar(&o.jobs, "jobs", 50000, "setup: no-op jobs to insert; latency: jobs to time")
	fs.IntVar(&o.workers, "workers", 1000, "the queue's MaxWorkers")
	fs.IntVar(&o.rate, "rate", 200, "latency: inserts per second")
	fs.DurationVar(&o.fetchCooldown, "fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown")
	fs.DurationVar(&o.fetchPollInterval, "fetch-poll-interval", 0, "River's FetchPollInterval (0: River's default, 1 s)")
	fs.IntVar(&o.maxConns, "max-conns", 0, "the pool's maximum connections (0: pgxpool's default)")
	_ = fs.Parse(os.Args[2:])
	if o.databaseURL == "" || o.schema == "" {
		fatalf("--database-url and --schema are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var out any
	var err error
	switch cmd {
	case "setup":
		err = setup(ctx, o, o.jobs)
	case "burn":
		out, err = burn(ctx, o)
	case "latency":
		out, err = latency(ctx, o)
	default:
		fatalf("unknown command %q: setup, burn or latency", cmd)
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

// logger sends River's logs to standard error, warnings and worse only:
// standard output carries the figures.
var logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s rbriver: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rbriver: "+format+"\n", args...)
	os.Exit(1)
}
