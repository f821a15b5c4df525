package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// inspectorPackage is the MCP inspector docs/reference/mcp.md tells
// people to run, pinned so that the test runs the same one each time.
const inspectorPackage = "@modelcontextprotocol/inspector@0.15.0"

// npxPath finds npx: the test skips without it on a developer's machine
// and fails when CI is set (CI installs Node's npm from Debian).
func npxPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("npx"); err == nil {
		return p
	}
	if os.Getenv("CI") == "" {
		t.Skip("the MCP inspector's test skipped: no npx (apt-get install npm)")
	}
	t.Fatal("CI is set but npx is not installed")
	return ""
}

// TestMCPInspectorListsAndCallsEveryTool runs the MCP inspector's command
// line as docs/reference/mcp.md gives it, with the configuration block
// of that page saved as mcp.json (its values filled in), against a real
// daemon: it lists rbd mcp's tools, then calls every one of them, each
// answered without an error.
func TestMCPInspectorListsAndCallsEveryTool(t *testing.T) {
	t.Parallel()
	npx := npxPath(t)
	raw, err := os.ReadFile("../../docs/reference/mcp.md")
	require.NoError(t, err)
	page := string(raw)
	_, block, ok := strings.Cut(page, "<!-- mcp-config -->\n```json\n")
	require.True(t, ok, "mcp.md has no configuration block")
	block, _, _ = strings.Cut(block, "```")
	require.Contains(t, page, "npx @modelcontextprotocol/inspector --cli --config mcp.json --server rbd --method tools/list")

	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/docs.yaml", agentVerbs)
	tokens := e.file(t, "tokens", "tok-person tenant=acme actor=alice roles=read,submit,approve,notify\n")
	secret := e.file(t, "secret", "whsec-agent\n")
	d := e.start(t, "--verbs", filepath.Dir(verbs), "--api-token-file", tokens, "--webhook-secret-file", secret, "--mcp-approvals")

	// The configuration as a person fills it in; "rbd" on the PATH is
	// this test binary acting as rbd.
	block = strings.NewReplacer(`"http://127.0.0.1:8080"`, `"`+d.server+`"`, `"the agent's token"`, `"tok-person"`,
		`".rbd/webhook-secret"`, `"`+secret+`"`).Replace(block)
	config := e.file(t, "mcp.json", block)
	bin := e.file(t, "bin/rbd", "#!/bin/sh\nRBD_TEST_MAIN=1 exec "+os.Args[0]+" \"$@\"\n")
	require.NoError(t, os.Chmod(bin, 0o755))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	inspect := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.CommandContext(ctx, npx, append([]string{"-y", inspectorPackage, "--cli", "--config", config, "--server", "rbd"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		cmd.Dir = e.dir
		out, err := cmd.Output()
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		require.NoError(t, err, "inspector %v: %s%s", args, out, stderr)
		var answer map[string]any
		require.NoError(t, json.Unmarshal(out, &answer), "inspector %v: %s", args, out)
		return answer
	}
	call := func(tool string, args ...string) map[string]any {
		t.Helper()
		a := []string{"--method", "tools/call", "--tool-name", tool}
		for _, arg := range args {
			a = append(a, "--tool-arg", arg)
		}
		answer := inspect(a...)
		require.NotEqual(t, true, answer["isError"], "%s %v: %v", tool, args, answer)
		structured, _ := answer["structuredContent"].(map[string]any)
		return structured
	}

	listed := inspect("--method", "tools/list")
	tools, _ := listed["tools"].([]any)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	require.ElementsMatch(t, []string{"whoami", "verbs", "submit", "status", "events", "next_actions", "retry", "regenerate",
		"cancel", "extend", "close", "notify", "costs", "approve", "reject"}, names)

	called := map[string]bool{}
	do := func(tool string, args ...string) map[string]any {
		called[tool] = true
		return call(tool, args...)
	}
	do("whoami")
	do("verbs")
	do("costs", "group_by=verb")
	// A held-open runbook: it waits for documents, then is signed at a
	// gate; it is extended, and closed at the end.
	sub := do("submit", "source=(docs.request :as @r)\n(docs.sign :after @r :as @s)\n", "hold_open=true")
	id, _ := sub["id"].(string)
	require.NotEmpty(t, id, "%v", sub)
	do("status", "id="+id)
	do("events", "id="+id)
	do("extend", "id="+id, "source=(docs.file :documents [] :as @f)\n")
	var key string
	waitUntil(t, "parked", func() (bool, error) {
		next := call("next_actions", "id="+id)
		actions, _ := next["next_actions"].([]any)
		for _, a := range actions {
			if tool, _ := a.(map[string]any)["tool"].(map[string]any); tool != nil && tool["name"] == "notify" {
				key, _ = tool["arguments"].(map[string]any)["correlation_key"].(string)
			}
		}
		return key != "", nil
	})
	called["next_actions"] = true
	do("notify", "correlation_key="+key, "status=completed", `result={"documents": ["passport"]}`)
	waitUntil(t, "at the gate", func() (bool, error) {
		v, err := d.client("tok-person").Get(ctx, id)
		return err == nil && v.State == "awaiting_approval", err
	})
	do("approve", "id="+id, "step=s", "comment=signed")
	waitUntil(t, "held open", func() (bool, error) {
		v, err := d.client("tok-person").Get(ctx, id)
		return err == nil && v.State == "held_open", err
	})
	do("close", "id="+id)
	// Another: rejected at the gate, retried, cancelled, regenerated.
	sub = do("submit", "source=(docs.sign :as @s)\n")
	other, _ := sub["id"].(string)
	waitUntil(t, "at the gate", func() (bool, error) {
		v, err := d.client("tok-person").Get(ctx, other)
		return err == nil && v.State == "awaiting_approval", err
	})
	do("reject", "id="+other, "step=s", "comment=not yet")
	waitUntil(t, "failed", func() (bool, error) {
		v, err := d.client("tok-person").Get(ctx, other)
		return err == nil && v.FinishedAt != nil, err
	})
	do("retry", "id="+other)
	do("cancel", "id="+other)
	waitUntil(t, "cancelled", func() (bool, error) {
		v, err := d.client("tok-person").Get(ctx, other)
		return err == nil && v.FinishedAt != nil, err
	})
	do("regenerate", "id="+other)
	for _, name := range names {
		require.True(t, called[name], "the inspector did not call %s", name)
	}
}
