package rbcmcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/cmd/internal/rbcmcp"
)

// testVerbs is a small catalogue: a verb that changes nothing, one that
// sends, and one gated.
const testVerbs = `
- name: draft
  domain: mail
  description: Drafts an email.
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    required: [to]
    properties:
      to: {type: string}
  output_schema:
    required: [to]
    properties:
      to: {type: string}
- name: send
  domain: mail
  description: Sends an email.
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
  input_schema:
    properties:
      to: {type: string}
`

func session(t *testing.T, opts rbcmcp.Options) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := rbcmcp.NewServer(opts).Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func verbsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mail.yaml"), []byte(testVerbs), 0o600))
	return dir
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, out), "%s answered %s", name, raw)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

const broken = "(mail.drat :to \"ada@example.com\" :as @d)\n(mail.send :to @d.to :after @d)\n"

// An agent writes a runbook with a typo, lints it, fixes it and reads its
// effects, with nothing but the tools' JSON.
func TestLintFixEffects(t *testing.T) {
	cs := session(t, rbcmcp.Options{Verbs: []string{verbsDir(t)}})

	var lint struct {
		Diagnostics []apitype.Diagnostic `json:"diagnostics"`
	}
	res := call(t, cs, "lint", map[string]any{"source": broken, "filename": "mail.rbk"}, &lint)
	require.True(t, res.IsError, "a runbook with errors is an error result")
	require.NotEmpty(t, lint.Diagnostics)
	d := lint.Diagnostics[0]
	require.Equal(t, "E010", d.Code)
	require.Equal(t, "mail.rbk", d.Range.File)
	require.Len(t, d.Fixes, 1)
	require.Equal(t, "mail.draft", d.Fixes[0].Edits[0].Text)

	var fixed struct {
		Source      string               `json:"source"`
		Changed     bool                 `json:"changed"`
		Applied     []apitype.Diagnostic `json:"applied"`
		Diagnostics []apitype.Diagnostic `json:"diagnostics"`
	}
	res = call(t, cs, "fix", map[string]any{"source": broken, "filename": "mail.rbk"}, &fixed)
	require.False(t, res.IsError, text(res))
	require.True(t, fixed.Changed)
	require.Contains(t, fixed.Source, "(mail.draft :to")
	// The typo, and then the redundant :after the next round saw.
	require.Len(t, fixed.Applied, 2)
	require.Equal(t, []string{"E010", "W002"}, []string{fixed.Applied[0].Code, fixed.Applied[1].Code})
	require.Contains(t, fixed.Source, "(mail.send :to @d.to)")
	require.Empty(t, fixed.Diagnostics)

	res = call(t, cs, "lint", map[string]any{"source": fixed.Source}, &lint)
	require.False(t, res.IsError, text(res))

	var effects struct {
		Effects []struct {
			Step        string `json:"step"`
			Verb        string `json:"verb"`
			SideEffects string `json:"side_effects"`
			Gate        string `json:"gate"`
			GatedBy     string `json:"gated_by"`
		} `json:"effects"`
	}
	res = call(t, cs, "effects", map[string]any{"source": fixed.Source}, &effects)
	require.False(t, res.IsError, text(res))
	require.Len(t, effects.Effects, 1)
	require.Equal(t, "mail.send", effects.Effects[0].Verb)
	require.Equal(t, "external_call", effects.Effects[0].SideEffects)
	require.Equal(t, "human_confirm", effects.Effects[0].Gate)

	var plan struct {
		Plan struct {
			PlanHash string            `json:"plan_hash"`
			Steps    []json.RawMessage `json:"steps"`
		} `json:"plan"`
	}
	res = call(t, cs, "compile", map[string]any{"source": fixed.Source}, &plan)
	require.False(t, res.IsError, text(res))
	require.Len(t, plan.Plan.Steps, 2)
	require.NotEmpty(t, plan.Plan.PlanHash)

	var broke struct {
		Diagnostics []apitype.Diagnostic `json:"diagnostics"`
	}
	res = call(t, cs, "compile", map[string]any{"source": broken}, &broke)
	require.True(t, res.IsError)
	require.Equal(t, "E010", broke.Diagnostics[0].Code)
}

func TestGraphVerbsFmtAndResources(t *testing.T) {
	dir := verbsDir(t)
	cs := session(t, rbcmcp.Options{})
	ok := "(mail.draft :to \"ada@example.com\" :as @d)\n(mail.send :to @d.to)\n"

	// Without configured verbs, a call names its own, or is told how.
	res := call(t, cs, "lint", map[string]any{"source": ok}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), `pass "verbs"`)

	var graph struct{ Format, Graph string }
	res = call(t, cs, "graph", map[string]any{"source": ok, "verbs": []string{dir}, "format": "mermaid"}, &graph)
	require.False(t, res.IsError, text(res))
	require.Equal(t, "mermaid", graph.Format)
	require.Contains(t, graph.Graph, "flowchart")
	res = call(t, cs, "graph", map[string]any{"source": ok, "verbs": []string{dir}, "format": "png"}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), `"format" must be dot or mermaid`)

	var verbs struct {
		Verbs []struct {
			Name   string `json:"name"`
			Domain string `json:"domain"`
		} `json:"verbs"`
	}
	res = call(t, cs, "verbs", map[string]any{"verbs": []string{dir}}, &verbs)
	require.False(t, res.IsError, text(res))
	require.Len(t, verbs.Verbs, 2)
	res = call(t, cs, "verbs", map[string]any{"verbs": []string{dir}, "name": "mail.sned"}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), `did you mean "mail.send"?`)

	var formatted struct {
		Source  string `json:"source"`
		Changed bool   `json:"changed"`
	}
	res = call(t, cs, "fmt", map[string]any{"source": "(mail.draft   :to \"a\"   :as @d)"}, &formatted)
	require.False(t, res.IsError, text(res))
	require.True(t, formatted.Changed)
	require.Equal(t, "(mail.draft :to \"a\" :as @d)\n", formatted.Source)
	res = call(t, cs, "fmt", map[string]any{"source": "(mail.draft :to"}, nil)
	require.True(t, res.IsError, "a broken text is not formatted")

	// Missing or mistyped arguments: an error naming the argument.
	res = call(t, cs, "lint", map[string]any{}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), `missing properties: ["source"]`)
	res = call(t, cs, "lint", map[string]any{"source": 7}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "/properties/source")

	// The references, as docs/reference has them.
	ctx := context.Background()
	page, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runbook://reference/language"})
	require.NoError(t, err)
	want, err := os.ReadFile("../../../docs/reference/language.md")
	require.NoError(t, err)
	require.Equal(t, string(want), page.Contents[0].Text)

	withVerbs := session(t, rbcmcp.Options{Verbs: []string{dir}})
	contract, err := withVerbs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runbook://verbs/mail.send"})
	require.NoError(t, err)
	var def struct {
		Name      string `json:"name"`
		Execution struct {
			SideEffects string `json:"side_effects"`
			Gate        string `json:"gate"`
		} `json:"execution"`
	}
	require.NoError(t, json.Unmarshal([]byte(contract.Contents[0].Text), &def))
	require.Equal(t, "send", def.Name)
	require.Equal(t, "human_confirm", def.Execution.Gate)
	_, err = withVerbs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runbook://verbs/mail.nope"})
	require.Error(t, err)
}
