package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

// newFlagSet makes a command's flag set, with its help from commandUsage:
// the same style as rbd's (cmd/internal/cli).
func newFlagSet(name string, stderr io.Writer) *cli.EnvFlags {
	return cli.NewEnvFlags("rbc "+name, commandUsage[name], stderr)
}

// verbPaths returns the --verbs values, or RBC_VERBS when none were given.
func verbPaths(flagged cli.ListFlag) ([]string, error) {
	if len(flagged) > 0 {
		return flagged, nil
	}
	if env := envVerbPaths(); env != nil {
		return env, nil
	}
	return nil, errors.New("no verb definitions: pass --verbs DIR or set RBC_VERBS")
}

// envVerbPaths is RBC_VERBS split into paths, or nil when it is not set.
func envVerbPaths() []string {
	if env := os.Getenv("RBC_VERBS"); env != "" {
		return strings.Split(env, string(os.PathListSeparator))
	}
	return nil
}

// parseFailed is the exit status after flags did not parse: 0 for -h,
// whose help was printed as asked, 2 for a bad flag (reported by the flag
// set) or a bad RBC_VERBS (reported here).
func parseFailed(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if !cli.Reported(err) {
		return cantRun(stderr, "%v", err)
	}
	return exitCantRun
}

// cantRun reports why a command could not run and returns exit status 2.
func cantRun(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "rbc: "+format+"\n", args...)
	return exitCantRun
}
