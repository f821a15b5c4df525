package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runbookdev/runbook/cmd/internal/clitest"
)

var update = flag.Bool("update", false, "rewrite the expected output in the txtar scripts")

// TestMain makes the test binary double as rbc, so the scripts run the real
// command, main and os.Exit included: as the command rbc on their PATH,
// and for the Go tests with RBC_TEST_MAIN set.
func TestMain(m *testing.M) {
	if os.Getenv("RBC_TEST_MAIN") == "1" {
		main()
		return
	}
	testscript.Main(m, map[string]func(){"rbc": main})
}

// TestScripts runs testdata/script/*.txtar. Besides testscript's built-in
// commands, a script may say `status N rbc ...` to require that rbc exits
// with status N (0, 1 or 2), its output kept for stdout/stderr/cmp, and
// `applyfixes FILE` applies the fixes of `rbc lint --format json` as an
// agent would (agent_test.go).
func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples/runbooks")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status":     clitest.Status,
			"applyfixes": applyFixes,
		},
	})
}

func TestMainIsTheCommand(t *testing.T) {
	// Guard against a test binary that forgot to register rbc.
	if _, err := os.Stat(os.Args[0]); err != nil {
		t.Fatal(err)
	}
}
