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

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rbc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
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
// whose help was printed as asked, 2 for a bad flag.
func parseFailed(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitCantRun
}

// cantRun reports why a command could not run and returns exit status 2.
func cantRun(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "rbc: "+format+"\n", args...)
	return exitCantRun
}
