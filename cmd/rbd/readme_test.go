package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// TestReadmeWebhookExample runs the README's curl example against a real
// daemon with a webhook secret, so that what it shows users keeps working.
func TestReadmeWebhookExample(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README example needs %s", tool)
		}
	}
	script := readmeBlock(t, "<!-- webhook-example")
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	secret := e.file(t, "secret", "whsec-readme\n")
	d := e.start(t, "--verbs", verbs, "--webhook-secret-file", secret)
	ctx := context.Background()
	sub, err := d.client("").Submit(ctx, client.SubmitRequest{Source: `(t.wait :as @docs)`})
	require.NoError(t, err)
	var key string
	waitUntil(t, "the step to park", func() (bool, error) {
		v, err := d.client("").Get(ctx, sub.ID.String())
		if err != nil || len(v.BlockedOn) == 0 {
			return false, err
		}
		key = v.BlockedOn[0].CorrelationKey
		return true, nil
	})

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "KEY="+key, "SECRET=whsec-readme", "RBD_SERVER="+d.server)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.JSONEq(t, `{"status":"accepted"}`, string(out))
	waitUntil(t, "the runbook to complete", func() (bool, error) {
		v, err := d.client("").Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
}

// readmeBlock returns the code block that follows marker in the README.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(raw), marker)
	require.True(t, ok, "the README has no %s", marker)
	_, after, ok = strings.Cut(after, "```sh\n")
	require.True(t, ok, "no code block after %s", marker)
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok, "the code block after %s does not end", marker)
	return block
}

// TestReadmeManualPath runs the README's path by hand, its blocks as
// written: rbd init, rbd serve with the files it made, then the client
// through the KYC example's park, notification and gate to the end. Only
// where the daemon listens and which database it uses come from the test
// (RBD_LISTEN, RBD_SERVER, DATABASE_URL), so that tests can run at once.
func TestReadmeManualPath(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "sed", "head"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's path needs %s", tool)
		}
	}
	work := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(examples, filepath.Join(work, "examples")))
	// rbd is this test binary, run as the program.
	bin := filepath.Join(work, "testbin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "rbd"),
		[]byte("#!/bin/sh\nRBD_TEST_MAIN=1 exec "+os.Args[0]+" \"$@\"\n"), 0o755))
	port, err := freePort()
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "RBD_LISTEN="+addr, "RBD_SERVER=http://"+addr,
		"DATABASE_URL="+pgtest.DatabaseURL(), "RBD_SCHEMA="+pgtest.Schema(t), "RBD_POLL_INTERVAL=50ms")
	bash := func(script string) *exec.Cmd {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = work, env
		return cmd
	}

	out, err := bash(readmeBlock(t, "<!-- manual-init -->")).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "wrote .rbd/api-tokens (mode 0600)")
	for _, f := range []string{".rbd/api-tokens", ".rbd/webhook-secret"} {
		info, err := os.Stat(filepath.Join(work, f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}

	var logs syncBuffer
	serve := bash(readmeBlock(t, "<!-- manual-serve"))
	serve.Stdout, serve.Stderr = &logs, &logs
	require.NoError(t, serve.Start())
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		_ = serve.Wait()
	})
	waitUntil(t, "the daemon to be ready", func() (bool, error) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})

	cl := bash(readmeBlock(t, "<!-- manual-client -->"))
	out, err = cl.CombinedOutput()
	require.NoError(t, err, "%s\n--- rbd serve:\n%s", out, logs.String())
	require.Contains(t, string(out), "GATE_APPROVED")
	require.Regexp(t, `(?m)^runbook complete$`, string(out))
}
