// Command rbd is the Runbook daemon and its client: `rbd serve` advances
// runbooks stored in PostgreSQL and serves the HTTP API of docs/design/daemon.md;
// `rbd migrate` brings the database's schema up to date; the other
// commands call a running daemon's API.
package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

// Exit statuses, as rbc's.
const (
	exitOK      = 0 // done (for --wait: complete or partial, or waiting on a person, a notification or its agent)
	exitFailed  = 1 // the daemon refused the request, or the runbook failed, was cancelled or escalated
	exitCantRun = 2 // bad flags, an unreadable file, no daemon to talk to
)

const usage = `rbd is the Runbook daemon and its client.

Server:
  rbd init     [--data-dir DIR]
  rbd serve    [--database-url URL] [--data-dir DIR] [--verbs DIR]... [--listen ADDR]
  rbd migrate  [--database-url URL] [--data-dir DIR]
  rbd prune    --finished-before AGE|TIME [--database-url URL] [--data-dir DIR]

Client (--server URL, --token T; RBD_SERVER, RBD_TOKEN):
  rbd submit  FILE.rbk|PLAN.json [--input k=v]... [--input k:=JSON]... [--inputs-file f.json]
              [--idempotency-key K] [--dry-run|--draft-only] [--hold-open] [--wait]
  rbd status  ID [--wait] [--format table|json]
  rbd list    [--status S] [--limit N] [--after CURSOR]
  rbd events  ID [--follow]
  rbd costs   [--group-by tenant|actor|verb|day|month] [--from T] [--to T]
  rbd outcomes ID
  rbd schedule create NAME FILE.rbk|PLAN.json --cron EXPR [--timezone TZ] [--input k=v]...
              [--overlap skip|allow] [--catch-up none|latest]
  rbd schedule list | pause ID | resume ID | delete ID
  rbd notify  KEY [--result JSON] [--failed CODE [--message M]] [--extend DURATION]
  rbd approve ID STEP [--by NAME] [--comment C]
  rbd reject  ID STEP [--by NAME] [--comment C]
  rbd cancel  ID [--by NAME]
  rbd retry   ID [--step KEY]... [--execute] [--by NAME]
  rbd regenerate ID [--input k=v]... [--idempotency-key K] [--by NAME]
  rbd replay  ID --mode reproduce|retry|regenerate
  rbd close   ID [--by NAME]
  rbd resolve ID STEP --action complete|retry|fail [--result JSON] [--by NAME]
  rbd extend  ID FILE.rbk [--input k=v]...
  rbd whoami
  rbd verbs   [NAME]
  rbd budget  set --tenant T [--runbook A] [--day A] [--month A]
  rbd budget  show [--tenant T]
  rbd mcp     [--webhook-secret-file F]   (MCP tools on standard input and output)
  rbd version

'rbd COMMAND -h' (or 'rbd help COMMAND') lists a command's flags and their environment variables.
Exit status: 0 done (a partial runbook too), 1 refused or the runbook failed, 2 the command could not run.
`

// command runs with its arguments and returns the exit status.
type command func(args []string, stdout, stderr io.Writer) int

var commands = map[string]command{
	"init":       runInit,
	"serve":      runServe,
	"migrate":    runMigrate,
	"prune":      runPrune,
	"submit":     runSubmit,
	"status":     runStatus,
	"list":       runList,
	"events":     runEvents,
	"costs":      runCosts,
	"outcomes":   runOutcomes,
	"schedule":   runSchedule,
	"notify":     runNotify,
	"approve":    func(a []string, o, e io.Writer) int { return runDecide("approve", a, o, e) },
	"reject":     func(a []string, o, e io.Writer) int { return runDecide("reject", a, o, e) },
	"cancel":     runCancel,
	"retry":      runRetry,
	"regenerate": runRegenerate,
	"replay":     runReplay,
	"close":      runClose,
	"resolve":    runResolve,
	"extend":     runExtend,
	"whoami":     runWhoami,
	"verbs":      runVerbs,
	"budget":     runBudget,
	"mcp":        runMCP,
	"version":    runVersion,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCantRun
	}
	switch args[0] {
	case "--version", "-version":
		return runVersion(nil, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// rbd help submit is rbd submit -h.
			if cmd, ok := commands[args[1]]; ok {
				return cmd([]string{"-h"}, stdout, stderr)
			}
			return cli.UnknownCommand(stderr, "rbd", args[1], slices.Sorted(maps.Keys(commands)))
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return cli.UnknownCommand(stderr, "rbd", args[0], slices.Sorted(maps.Keys(commands)))
	}
	return cmd(args[1:], stdout, stderr)
}

func runVersion(_ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "rbd", version())
	return exitOK
}

// version is the version rbd and rbc both report.
func version() string { return cli.Version() }

// cantRun reports why a command could not run and returns its status.
func cantRun(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "rbd: "+format+"\n", args...)
	return exitCantRun
}
