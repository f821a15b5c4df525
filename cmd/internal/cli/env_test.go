package cli_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

func newFlags(t *testing.T) (*cli.EnvFlags, *string, *cli.ListFlag, *time.Duration) {
	t.Helper()
	fs := cli.NewEnvFlags("test", "Usage: test\n", io.Discard)
	listen := fs.String("listen", "127.0.0.1:8080", "where")
	fs.Env("listen", "TEST_LISTEN")
	var verbs cli.ListFlag
	fs.Var(&verbs, "verbs", "verb dirs")
	fs.EnvList("verbs", "TEST_VERBS")
	grace := fs.Duration("grace", time.Second, "grace")
	fs.Env("grace", "TEST_GRACE")
	return fs, listen, &verbs, grace
}

func TestEnvFillsFlagsNotGiven(t *testing.T) {
	t.Setenv("TEST_LISTEN", ":9000")
	t.Setenv("TEST_VERBS", "a:b")
	t.Setenv("TEST_GRACE", "3s")
	fs, listen, verbs, grace := newFlags(t)
	rest, err := fs.Parse([]string{"x", "--grace", "5s", "y"})
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y"}, rest)
	require.Equal(t, ":9000", *listen)
	require.Equal(t, cli.ListFlag{"a", "b"}, *verbs)
	require.Equal(t, 5*time.Second, *grace, "a flag on the command line wins")
}

func TestEnvEmptyIsUnset(t *testing.T) {
	t.Setenv("TEST_LISTEN", "")
	fs, listen, verbs, _ := newFlags(t)
	_, err := fs.Parse([]string{"--verbs", "v"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", *listen)
	require.Equal(t, cli.ListFlag{"v"}, *verbs)
}

func TestEnvBadValueNamesTheVariable(t *testing.T) {
	t.Setenv("TEST_GRACE", "soon")
	fs, _, _, _ := newFlags(t)
	_, err := fs.Parse(nil)
	require.ErrorContains(t, err, `invalid value "soon" in TEST_GRACE`)
}

func TestUsageListsVariablesAndDefaults(t *testing.T) {
	var b strings.Builder
	fs := cli.NewEnvFlags("test", "Usage: test\n", &b)
	fs.String("listen", "127.0.0.1:8080", "where to listen")
	fs.Env("listen", "TEST_LISTEN")
	fs.Var(cli.Choice("text", "text", "json"), "format", "output format")
	fs.Usage()
	require.Equal(t, `Usage: test

Flags (each may also be set by the environment variable shown):
  --format word
      output format (default text)
  --listen string
      where to listen (env TEST_LISTEN; default 127.0.0.1:8080)
`, b.String())
}

func TestParseKeepsPositionalArgumentsAfterDoubleDash(t *testing.T) {
	fs, _, verbs, _ := newFlags(t)
	rest, err := fs.Parse([]string{"a", "--verbs", "v", "--", "--verbs", "b"})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "--verbs", "b"}, rest)
	require.Equal(t, cli.ListFlag{"v"}, *verbs)
}
