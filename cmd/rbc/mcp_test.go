package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
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
