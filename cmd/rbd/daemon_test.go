package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable/pgtest"
)

// daemon is a real `rbd serve` process: the test binary run as rbd, or
// the binary RBD_TEST_DAEMON names (a build of an older commit, to show
// that a regression test fails there; docs/reliability.md).
type daemon struct {
	t      testing.TB
	cmd    *exec.Cmd
	server string
	logs   *syncBuffer
	done   chan struct{}
	err    error
}

// rbdBinary is the rbd the harness runs: the test binary, or the one
// RBD_TEST_DAEMON names.
func rbdBinary() string {
	if other := os.Getenv("RBD_TEST_DAEMON"); other != "" {
		return other
	}
	return os.Args[0]
}

// daemonEnv is where a test's daemons run: their schema and settings.
type daemonEnv struct {
	schema string
	dir    string   // a scratch directory: verb files, tokens, data
	env    []string // RBD_* variables for every daemon of the test
	// builtinPolicy leaves verb files as written and starts daemons
	// without --policy under the built-in policy (fixture_policy_test.go).
	builtinPolicy bool
}

func newDaemonEnv(t testing.TB) *daemonEnv {
	t.Helper()
	return &daemonEnv{
		schema: pgtest.Schema(t),
		dir:    t.TempDir(),
		env:    []string{"RBD_LOG_FORMAT=json", "RBD_POLL_INTERVAL=50ms", "RBD_SWEEP_INTERVAL=200ms"},
	}
}

// file writes a file in the scratch directory and returns its path.
func (e *daemonEnv) file(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if !e.builtinPolicy && strings.HasSuffix(name, ".yaml") {
		content = tagRoutine(content)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// start runs rbd serve against the test's schema with extra flags, and
// waits until it is ready.
func (e *daemonEnv) start(t testing.TB, flags ...string) *daemon {
	t.Helper()
	if !e.builtinPolicy && !hasFlag(flags, "--policy") && hasFlag(flags, "--verbs") {
		flags = append(flags, "--policy", e.fixturePolicy(t, flags))
	}
	port, err := freePort()
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	d := &daemon{t: t, server: "http://" + addr, logs: &syncBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(rbdBinary(), append([]string{"serve"}, flags...)...)
	d.cmd.Env = append(os.Environ(), "RBD_TEST_MAIN=1", "RBD_LISTEN="+addr, "RBD_SCHEMA="+e.schema)
	if !hasFlag(flags, "--data-dir") {
		d.cmd.Env = append(d.cmd.Env, "DATABASE_URL="+pgtest.DatabaseURL())
	}
	d.cmd.Env = append(d.cmd.Env, e.env...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	require.NoError(t, d.cmd.Start())
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			if os.Getenv("RBD_CPUPROFILE") != "" {
				// A profiled daemon writes its profiles as it stops
				// (serve.go's startProfile): stop it, then kill it if
				// it does not stop.
				_ = d.cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-d.done:
				case <-time.After(30 * time.Second):
				}
			}
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("rbd serve logs:\n%s", d.logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ready := make(chan error, 1)
	go func() { ready <- waitReady(ctx, d.server, 60*time.Second) }()
	select {
	case err := <-ready:
		require.NoError(t, err, "rbd serve never became ready:\n%s", d.logs.String())
	case <-d.done:
		t.Fatalf("rbd serve exited (%v) before it was ready:\n%s", d.err, d.logs.String())
	}
	return d
}

func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

func (d *daemon) client(token string) *client.Client {
	return &client.Client{BaseURL: d.server, Token: token}
}

// signal sends sig and waits for the process to exit, returning its exit
// status.
func (d *daemon) stop(sig syscall.Signal) int {
	d.t.Helper()
	require.NoError(d.t, d.cmd.Process.Signal(sig))
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		d.t.Fatalf("rbd serve did not exit after %v:\n%s", sig, d.logs.String())
	}
	var exitErr *exec.ExitError
	if errors.As(d.err, &exitErr) {
		return exitErr.ExitCode()
	}
	require.NoError(d.t, d.err)
	return 0
}

// syncBuffer collects a process's output for the test to read while it
// runs.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitUntil polls cond until it holds or the time runs out.
func waitUntil(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, err := cond()
		require.NoError(t, err)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
