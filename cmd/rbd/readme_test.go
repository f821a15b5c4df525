package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/durable/localpg"
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
	sub, err := d.client("").Submit(ctx, apitype.SubmitRequest{Source: `(t.wait :as @docs)`})
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
	block, err := readmeBlockText(marker)
	require.NoError(t, err)
	return block
}

// readmeBlockText is readmeBlock, for a script command.
func readmeBlockText(marker string) (string, error) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		return "", err
	}
	_, after, ok := strings.Cut(string(raw), marker)
	if !ok {
		return "", fmt.Errorf("the README has no %s", marker)
	}
	if _, after, ok = strings.Cut(after, "```sh\n"); !ok {
		return "", fmt.Errorf("no code block after %s", marker)
	}
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		return "", fmt.Errorf("the code block after %s does not end", marker)
	}
	return block, nil
}

// TestReadme runs testdata/readme/*.txtar: the README's manual path, its
// blocks as written, from a checkout after make build, with the embedded
// PostgreSQL that rbd serve starts when given no database (docs/daemon.md):
// manual.txtar as the user running the tests (root on the build machine
// and in CI), manual_unprivileged.txtar, when that is root, as nobody. Only
// where the daemon listens comes from the test (RBD_LISTEN, RBD_SERVER),
// so that both run at once. Besides testscript's commands:
//
//	readme MARKER VAR   set $VAR to the README's code block after <!-- MARKER
//	ready [TIMEOUT]     wait until the daemon at $RBD_SERVER is ready
//	handover USER       give $WORK, and all in it, to USER (root only)
//
// and the condition [root]. The work directories are in one that another
// user may pass through, for manual_unprivileged.txtar's nobody; the
// postgres user need not.
func TestReadme(t *testing.T) {
	for _, tool := range []string{"bash", "sed", "head", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's path needs %s", tool)
		}
	}
	if _, err := localpg.FindBinaries(); err != nil {
		t.Skipf("the embedded PostgreSQL needs its binaries: %v", err)
	}
	root, err := os.MkdirTemp("", "rbd-readme-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o755))
	// rbd is this test binary, copied where another user may run it.
	binary := filepath.Join(root, "rbd.test")
	require.NoError(t, copyFile(os.Args[0], binary, 0o755))
	examples, err := filepath.Abs("../../examples")
	require.NoError(t, err)
	testscript.Run(t, testscript.Params{
		Dir:         "testdata/readme",
		WorkdirRoot: root,
		Setup: func(env *testscript.Env) error {
			// A checkout after make build: bin/rbd, and the examples.
			if err := os.Chmod(env.WorkDir, 0o755); err != nil {
				return err
			}
			if err := os.Mkdir(filepath.Join(env.WorkDir, "bin"), 0o755); err != nil {
				return err
			}
			wrapper := "#!/bin/sh\nRBD_TEST_MAIN=1 exec " + binary + " \"$@\"\n"
			if err := os.WriteFile(filepath.Join(env.WorkDir, "bin", "rbd"), []byte(wrapper), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(examples, filepath.Join(env.WorkDir, "examples")); err != nil {
				return err
			}
			port, err := freePort()
			if err != nil {
				return err
			}
			addr := "127.0.0.1:" + strconv.Itoa(port)
			env.Setenv("DATABASE_URL", "")
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("RBD_LISTEN", addr)
			env.Setenv("RBD_SERVER", "http://"+addr)
			env.Setenv("RBD_POLL_INTERVAL", "50ms")
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"ready": cmdReady,
			"readme": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: readme MARKER VAR")
				}
				block, err := readmeBlockText("<!-- " + args[0])
				ts.Check(err)
				ts.Setenv(args[1], block)
			},
			"handover": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: handover USER")
				}
				u, err := user.Lookup(args[0])
				ts.Check(err)
				uid, _ := strconv.Atoi(u.Uid)
				gid, _ := strconv.Atoi(u.Gid)
				ts.Check(filepath.Walk(ts.Getenv("WORK"), func(p string, _ os.FileInfo, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, uid, gid)
				}))
			},
		},
	})
}

// copyFile copies a file, with mode perm.
func copyFile(from, to string, perm os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
