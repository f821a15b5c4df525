package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// listFlag is a flag that may be repeated.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// choiceFlag accepts one of a fixed set of words.
type choiceFlag struct {
	value   string
	choices []string
}

func (c *choiceFlag) String() string { return c.value }
func (c *choiceFlag) Set(v string) error {
	if !slices.Contains(c.choices, v) {
		return fmt.Errorf("must be one of %s", strings.Join(c.choices, ", "))
	}
	c.value = v
	return nil
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rbc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses flags wherever they stand among the positional
// arguments, so `rbc compile x.rbk --verbs v` works as well as the usual
// order. Everything after "--" is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// flag stops at "--" after consuming it, or at the first non-flag.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// verbPaths returns the --verbs values, or RBC_VERBS when none were given.
func verbPaths(flagged listFlag) ([]string, error) {
	if len(flagged) > 0 {
		return flagged, nil
	}
	if env := os.Getenv("RBC_VERBS"); env != "" {
		return strings.Split(env, string(os.PathListSeparator)), nil
	}
	return nil, errors.New("no verb definitions: pass --verbs DIR or set RBC_VERBS")
}

// cantRun reports why a command could not run and returns exit status 2.
func cantRun(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "rbc: "+format+"\n", args...)
	return exitCantRun
}
