package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/runtime/httpapi"
	"github.com/runbookdev/runbook/runtime/rbtype"
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
	sub, err := d.client("").Submit(ctx, httpapi.SubmitRequest{Source: `(t.wait :as @docs)`}, "")
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
