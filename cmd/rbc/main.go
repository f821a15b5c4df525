// Command rbc compiles runbook scripts against verb definitions into frozen
// plans, and lints, formats and draws them. See docs/design/language.md for the
// language and `rbc help` for the commands.
package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

// Exit statuses of docs/design/language.md.
const (
	exitOK      = 0 // no errors (warnings allowed)
	exitErrors  = 1 // errors found in the inputs
	exitCantRun = 2 // bad flags, unreadable files
)

const usage = `rbc compiles runbooks into frozen plans.

Usage:
  rbc compile --verbs DIR FILE.rbk [-o plan.json] [--format text|json|sarif]
  rbc lint    --verbs DIR [FILE.rbk...] [--format text|json|sarif]
  rbc fmt     [-w] [-l] FILE.rbk...
  rbc fix     --verbs DIR [-w] FILE.rbk... [--format text|json|sarif]
  rbc graph   --verbs DIR FILE.rbk [--format dot|mermaid]
  rbc effects --verbs DIR FILE.rbk [--format text|json]
  rbc verbs   --verbs DIR [NAME] [--format text|json]
  rbc lsp     [--verbs DIR]     (a language server on standard input and output)
  rbc mcp     [--verbs DIR]     (MCP tools for agents on standard input and output)
  rbc version

--verbs may be repeated; RBC_VERBS (a list separated by %q) is its default.
compile, lint, fix, graph and effects take --max-fanout N (default 1000): the most
elements a for-each's list written out may hold.
'rbc COMMAND -h' (or 'rbc help COMMAND') says more about a command and lists its flags.
Exit status: 0 no errors, 1 errors found, 2 the command could not run.
`

func main() {
	// The language and MCP servers are no batch jobs: they live as long
	// as the editor or the agent, so they keep Go's default heap growth.
	if len(os.Args) < 2 || (os.Args[1] != "lsp" && os.Args[1] != "mcp") {
		tuneGC()
	}
	stop := startProfile(os.Getenv("RBC_CPUPROFILE"))
	status := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}

// startProfile writes a CPU profile to path while rbc runs, when path is
// set; BENCHMARKS.md uses it to show where compile time goes.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rbc: RBC_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "rbc: RBC_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// tuneGC lets the heap grow to five times the live data between
// collections, unless GOGC says otherwise. rbc is a short batch job whose
// live heap (tokens, AST, plan) is large and all needed until it exits;
// the default of twice collects it again and again for nothing, which cost
// a fifth of compile time at 100k steps.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// command is one subcommand: it reads its own flags from args.
type command func(args []string, stdout, stderr io.Writer) int

func run(args []string, stdout, stderr io.Writer) int {
	commands := map[string]command{
		"compile": runCompile,
		"lint":    runLint,
		"fmt":     runFmt,
		"fix":     runFix,
		"graph":   runGraph,
		"effects": runEffects,
		"verbs":   runVerbs,
		"lsp":     runLsp,
		"mcp":     runMCP,
		"version": runVersion,
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, string(os.PathListSeparator))
		return exitCantRun
	}
	switch args[0] {
	case "--version", "-version":
		return runVersion(nil, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// rbc help compile is rbc compile -h.
			if cmd, ok := commands[args[1]]; ok {
				return cmd([]string{"-h"}, stdout, stderr)
			}
			return cli.UnknownCommand(stderr, "rbc", args[1], slices.Sorted(maps.Keys(commands)))
		}
		fmt.Fprintf(stdout, usage, string(os.PathListSeparator))
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return cli.UnknownCommand(stderr, "rbc", args[0], slices.Sorted(maps.Keys(commands)))
	}
	return cmd(args[1:], stdout, stderr)
}
