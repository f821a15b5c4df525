package main

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runbookdev/runbook/cmd/internal/clitest"
	"github.com/runbookdev/runbook/durable/pgtest"
)

var update = flag.Bool("update", false, "rewrite the expected output in the txtar scripts")

// TestMain makes the test binary double as rbd: for the scripts (as the
// command rbd on their PATH) and for the Go harness (with RBD_TEST_MAIN
// set). The tests run against the PostgreSQL that pgtest provides.
func TestMain(m *testing.M) {
	if os.Getenv("RBD_TEST_MAIN") == "1" {
		main()
		return
	}
	testscript.Main(pgtest.Wrap(m), map[string]func(){"rbd": main})
}

// TestScripts runs testdata/script/*.txtar, each against a daemon of its
// own: a fresh schema, a free port. Besides testscript's commands:
//
//	status N rbd ...   rbd must exit with status N
//	grab NAME REGEXP   set $NAME from the last stdout
//	ready [TIMEOUT]    wait until the daemon at $RBD_SERVER is ready (30s)
//	fake NAME FILE     start a fake HTTP service; $NAME is its URL
//	fakelog NAME       print the requests a fake received
//	database NAME FILE create a database of the script's own, run FILE's
//	                   SQL in it (pg.crud's tables); $NAME is its URL
func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples/runbooks")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			schema, drop, err := pgtest.NewSchema()
			if err != nil {
				return err
			}
			env.Defer(func() { _ = drop() })
			port, err := freePort()
			if err != nil {
				return err
			}
			addr := "127.0.0.1:" + strconv.Itoa(port)
			env.Setenv("EXAMPLES", examples)
			env.Setenv("DATABASE_URL", pgtest.DatabaseURL())
			env.Setenv("RBD_SCHEMA", schema)
			env.Setenv("RBD_LISTEN", addr)
			env.Setenv("RBD_SERVER", "http://"+addr)
			env.Setenv("RBD_LOG_FORMAT", "json")
			env.Setenv("RBD_POLL_INTERVAL", "50ms")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status":   clitest.Status,
			"grab":     clitest.Grab,
			"ready":    cmdReady,
			"fake":     clitest.Fake,
			"fakelog":  clitest.FakeLog,
			"database": cmdDatabase,
		},
	})
}

func cmdDatabase(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: database NAME FILE")
	}
	dbURL, drop, err := pgtest.NewDatabase(ts.ReadFile(args[1]))
	ts.Check(err)
	ts.Defer(func() { _ = drop() })
	ts.Setenv(args[0], dbURL)
}

func cmdReady(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: ready [TIMEOUT]")
	}
	timeout := 30 * time.Second
	if len(args) == 1 {
		d, err := time.ParseDuration(args[0])
		ts.Check(err)
		timeout = d
	}
	if err := waitReady(context.Background(), ts.Getenv("RBD_SERVER"), timeout); err != nil {
		ts.Fatalf("%v", err)
	}
}

// waitReady polls /readyz until it answers 200.
func waitReady(ctx context.Context, server string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a port no one listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
