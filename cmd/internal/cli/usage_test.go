package cli_test

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

// A flag mistake is said once, naming the flag as users type it, with the
// flags it may have meant and the command's usage line; never the whole
// help.
func TestFlagMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--wiat"}, "rbd submit: unknown flag --wiat (did you mean --wait?)"},
		{[]string{"--frobnicate"}, "rbd submit: unknown flag --frobnicate"},
		{[]string{"--format", "yaml"}, `rbd submit: invalid value "yaml" for flag --format: must be one of table, json`},
		{[]string{"--wait=maybe"}, `rbd submit: flag --wait is true or false, not "maybe" (--wait alone means true)`},
		{[]string{"--format"}, "rbd submit: flag --format needs a value"},
		{[]string{"-o"}, "rbd submit: flag -o needs a value"},
	} {
		var out bytes.Buffer
		fs := cli.NewEnvFlags("rbd submit", "Usage: rbd submit FILE [flags]\n\nSubmits.\n", &out)
		fs.Bool("wait", false, "wait")
		fs.Var(cli.Choice("table", "table", "json"), "format", "output")
		fs.String("o", "", "output file")
		_, err := fs.Parse(tc.args)
		require.ErrorIs(t, err, cli.ErrUsage, tc.args)
		require.True(t, cli.Reported(err))
		require.Equal(t, tc.want+"\nUsage: rbd submit FILE [flags]  ('rbd submit -h' for help)\n", out.String(), tc.args)
	}
}

// -h prints the help, and says so to the caller.
func TestHelpIsAsked(t *testing.T) {
	var out bytes.Buffer
	fs := cli.NewEnvFlags("rbc lint", "Usage: rbc lint [FILE...]\n", &out)
	fs.Bool("q", false, "quiet")
	_, err := fs.Parse([]string{"-h"})
	require.True(t, errors.Is(err, flag.ErrHelp))
	require.True(t, cli.Reported(err))
	require.True(t, strings.HasPrefix(out.String(), "Usage: rbc lint [FILE...]\n\nFlags"))
	require.Contains(t, out.String(), "  -q\n      quiet\n")
}

func TestUnknownCommand(t *testing.T) {
	var out bytes.Buffer
	require.Equal(t, 2, cli.UnknownCommand(&out, "rbc", "lnit", []string{"compile", "fmt", "lint"}))
	require.Equal(t, "rbc: unknown command \"lnit\" (did you mean \"lint\"?)\nRun 'rbc help' for the list of commands.\n", out.String())
	out.Reset()
	cli.UnknownCommand(&out, "rbd", "frobnicate", []string{"submit"})
	require.Equal(t, "rbd: unknown command \"frobnicate\"\nRun 'rbd help' for the list of commands.\n", out.String())
}
