package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// rbc mcp as an editor or an agent starts it: a process whose standard
// input and output carry the protocol, driven by the SDK's own client.
func TestMCPOverStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(os.Args[0], "mcp", "--verbs", "../../examples/runbooks/kyc-onboarding/verbs")
	cmd.Env = append(os.Environ(), "RBC_TEST_MAIN=1")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	require.Equal(t, "rbc", cs.InitializeResult().ServerInfo.Name)

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	require.ElementsMatch(t, []string{"lint", "fix", "compile", "effects", "graph", "verbs", "fmt"}, names)

	src, err := os.ReadFile("../../examples/runbooks/kyc-onboarding/kyc-onboarding.rbk")
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "effects", Arguments: map[string]any{"source": string(src), "filename": "kyc-onboarding.rbk"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	// The same list `rbc effects --format json` prints.
	var got struct {
		Effects json.RawMessage `json:"effects"`
	}
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &got))
	var stdout, stderr bytes.Buffer
	status := run([]string{"effects", "--verbs", "../../examples/runbooks/kyc-onboarding/verbs", "--format", "json",
		"../../examples/runbooks/kyc-onboarding/kyc-onboarding.rbk"}, &stdout, &stderr)
	require.Equal(t, exitOK, status, stderr.String())
	require.JSONEq(t, stdout.String(), string(got.Effects))

	resources, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI)
	}
	require.Contains(t, uris, "runbook://reference/language")
	page, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runbook://verbs/kyc.open-case"})
	require.NoError(t, err)
	require.Contains(t, page.Contents[0].Text, `"name": "open-case"`)
}

// mcpConfig reads the configuration block of docs/reference/mcp.md.
func mcpConfig(t *testing.T) map[string]struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
} {
	t.Helper()
	raw, err := os.ReadFile("../../docs/reference/mcp.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(raw), "<!-- mcp-config -->\n```json\n")
	require.True(t, ok, "mcp.md has no configuration block")
	block, _, _ = strings.Cut(block, "```")
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(block), &cfg))
	return cfg.MCPServers
}

// The rbc entry of the configuration in docs/reference/mcp.md starts a
// server that answers, run as written from the repository's root.
func TestMCPConfigInTheDocs(t *testing.T) {
	entry, ok := mcpConfig(t)["rbc"]
	require.True(t, ok)
	require.Equal(t, "rbc", entry.Command)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(os.Args[0], entry.Args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "RBC_TEST_MAIN=1")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	raw, err := os.ReadFile("../../docs/reference/mcp.md")
	require.NoError(t, err)
	n := 0
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		require.Contains(t, string(raw), "| `"+tool.Name+"` |", "mcp.md's table of rbc's tools has no row for %s", tool.Name)
		n++
	}
	require.Equal(t, 7, n)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "verbs", Arguments: map[string]any{"name": "kyc.open-case"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "the --verbs of the configuration are found")
}
