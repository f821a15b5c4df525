package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/cmd/internal/rbcmcp"
	"github.com/runbookdev/runbook/rbtype"
)

// agentVerbs are what the agent's runbook calls: a request for documents
// that waits for the outside world, their filing, and a gated sign-off.
const agentVerbs = `
- name: request
  domain: docs
  description: Asks a client for documents; the portal notifies when they arrive.
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: P7D}
  output_schema:
    required: [documents]
    properties:
      documents: {type: array, items: {type: string}}
- name: file
  domain: docs
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
  input_schema:
    properties:
      documents: {type: array, items: {type: string}}
- name: sign
  domain: docs
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
`

// agentTokens: an agent that may submit and notify but not approve.
const agentTokens = "tok-agent tenant=acme actor=agent-7 roles=read,submit,notify\n"

// An agent's whole exchange, with nothing but MCP: it writes a broken
// runbook, lints it with rbc's tools, applies the fixes, checks the
// effects, submits it with rbd's, reads next_actions, sends the
// notification and sees the runbook complete; then it tries to approve a
// gate its token may not decide, and cannot. rbc's tools are served in
// memory; rbd's by `rbd mcp` over stdio and by the daemon's POST /mcp.
func TestMCPAgentExchange(t *testing.T) {
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/docs.yaml", agentVerbs)
	tokens := e.file(t, "tokens", agentTokens)
	secret := e.file(t, "secret", "whsec-agent\n")
	d := e.start(t, "--verbs", filepath.Dir(verbs), "--api-token-file", tokens, "--webhook-secret-file", secret, "--mcp-approvals")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rbc := connect(t, ctx, rbcmcp.NewServer(rbcmcp.Options{Verbs: []string{filepath.Dir(verbs)}}))

	stdio := exec.Command(os.Args[0], "mcp")
	stdio.Env = append(os.Environ(), "RBD_TEST_MAIN=1", "RBD_SERVER="+d.server, "RBD_TOKEN=tok-agent", "RBD_WEBHOOK_SECRET_FILE="+secret)
	overStdio, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: stdio}, nil)
	require.NoError(t, err)
	defer overStdio.Close()
	overHTTP, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: d.server + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: withToken{"tok-agent"}},
	}, nil)
	require.NoError(t, err)
	defer overHTTP.Close()

	for _, rbd := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"rbd mcp", overStdio}, {"POST /mcp", overHTTP}} {
		t.Run(rbd.name, func(t *testing.T) {
			broken := "(docs.reqest :as @docs)\n(docs.file :documents @docs.documents :after @docs :as @filed)\n"
			var lint struct {
				Diagnostics []apitype.Diagnostic `json:"diagnostics"`
			}
			res := use(t, ctx, rbc, "lint", map[string]any{"source": broken, "filename": "agent.rbk"}, &lint)
			require.True(t, res.IsError)
			require.Equal(t, "E010", lint.Diagnostics[0].Code)
			require.Contains(t, lint.Diagnostics[0].Headline(), `did you mean "docs.request"?`)

			var fixed struct {
				Source      string               `json:"source"`
				Diagnostics []apitype.Diagnostic `json:"diagnostics"`
			}
			res = use(t, ctx, rbc, "fix", map[string]any{"source": broken, "filename": "agent.rbk"}, &fixed)
			require.False(t, res.IsError, content(res))
			require.Len(t, fixed.Diagnostics, 1, "a warning is left, which has no fix")
			require.Equal(t, "W001", fixed.Diagnostics[0].Code)
			require.Equal(t, "(docs.request :as @docs)\n(docs.file :documents @docs.documents :as @filed)\n", fixed.Source)

			var effects struct {
				Effects []struct {
					Step, Verb, SideEffects, Gate string
				} `json:"effects"`
			}
			res = use(t, ctx, rbc, "effects", map[string]any{"source": fixed.Source}, &effects)
			require.False(t, res.IsError, content(res))
			require.Len(t, effects.Effects, 2, "the request reaches a person, the filing writes a database")
			require.Equal(t, "docs", effects.Effects[0].Step)

			var sub apitype.SubmitResponse
			res = use(t, ctx, rbd.cs, "submit", map[string]any{"source": fixed.Source, "filename": "agent.rbk", "idempotency_key": "agent-" + rbd.name}, &sub)
			require.False(t, res.IsError, content(res))
			require.True(t, sub.Created)

			var next apitype.MCPNextActions
			waitFor(t, func() bool {
				use(t, ctx, rbd.cs, "next_actions", map[string]any{"id": sub.ID.String()}, &next)
				return next.State == string(rbtype.StateParked)
			})
			require.Len(t, next.NextActions, 1)
			require.Equal(t, apitype.ActionNotify, next.NextActions[0].Kind)
			require.Equal(t, "docs", next.NextActions[0].Step)
			// The action as a call of this server's notify tool, its key the
			// wait's: what an agent calls as it is.
			key := next.BlockedOn[0].CorrelationKey
			require.Equal(t, &apitype.ToolCall{Name: "notify", Arguments: map[string]any{"correlation_key": key, "status": "completed", "result": map[string]any{}}},
				next.NextActions[0].Tool)

			var ack apitype.NotificationResponse
			res = use(t, ctx, rbd.cs, "notify", map[string]any{"correlation_key": next.BlockedOn[0].CorrelationKey, "status": "completed",
				"result": map[string]any{"documents": []string{"passport.pdf"}}}, &ack)
			require.False(t, res.IsError, content(res))
			require.Equal(t, "accepted", ack.Status)

			var view apitype.RunbookView
			waitFor(t, func() bool {
				use(t, ctx, rbd.cs, "status", map[string]any{"id": sub.ID.String()}, &view)
				return view.FinishedAt != nil
			})
			require.Equal(t, rbtype.RunbookComplete, view.Status)
			require.JSONEq(t, `{"documents":["passport.pdf"]}`, string(view.Outcomes["filed"]))

			// A gate this token may not decide: the same refusal as the
			// route's, and the gate still waits.
			var gated apitype.SubmitResponse
			use(t, ctx, rbd.cs, "submit", map[string]any{"source": "(docs.sign :as @sign)\n", "idempotency_key": "sign-" + rbd.name}, &gated)
			waitFor(t, func() bool {
				use(t, ctx, rbd.cs, "status", map[string]any{"id": gated.ID.String()}, &view)
				return view.State == rbtype.StateAwaitingApproval
			})
			var refused struct {
				Status int          `json:"status"`
				Error  client.Error `json:"error"`
			}
			res = use(t, ctx, rbd.cs, "approve", map[string]any{"id": gated.ID.String(), "step": "sign"}, &refused)
			require.True(t, res.IsError)
			require.Equal(t, http.StatusForbidden, refused.Status)
			require.Equal(t, client.CodeForbidden, refused.Error.Code)
			use(t, ctx, rbd.cs, "status", map[string]any{"id": gated.ID.String()}, &view)
			step, _ := view.Step("sign")
			require.Equal(t, rbtype.StepWaitingApproval, step.Status)
		})
	}
}

// withToken adds the bearer token to each request.
type withToken struct{ token string }

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect serves srv to the SDK's client over the in-memory transport.
func connect(t *testing.T, ctx context.Context, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// use calls a tool and decodes its structured result into out.
func use(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, tool)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out), "%s answered %s", tool, raw)
	return res
}

func content(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// waitFor polls cond until it holds, for at most 30 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "the runbook never got there")
		time.Sleep(50 * time.Millisecond)
	}
}

// The rbd entries of the configuration in docs/reference/mcp.md: rbd mcp
// started as written, with the environment it names pointed at a test
// daemon, and the remote entry's URL and header used as written against
// the daemon's /mcp. Every tool has its row in the page's table.
func TestMCPConfigInTheDocs(t *testing.T) {
	raw, err := os.ReadFile("../../docs/reference/mcp.md")
	require.NoError(t, err)
	page := string(raw)
	_, block, ok := strings.Cut(page, "<!-- mcp-config -->\n```json\n")
	require.True(t, ok, "mcp.md has no configuration block")
	block, _, _ = strings.Cut(block, "```")
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	var cfg struct {
		MCPServers map[string]server `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(block), &cfg))

	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/docs.yaml", agentVerbs)
	tokens := e.file(t, "tokens", "tok-person tenant=acme actor=alice roles=read,submit,approve,notify\n")
	secret := e.file(t, "secret", "whsec-agent\n")
	d := e.start(t, "--verbs", filepath.Dir(verbs), "--api-token-file", tokens, "--webhook-secret-file", secret, "--mcp-approvals")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	local := cfg.MCPServers["rbd"]
	require.Equal(t, "rbd", local.Command)
	values := map[string]string{"RBD_SERVER": d.server, "RBD_TOKEN": "tok-person", "RBD_WEBHOOK_SECRET_FILE": secret}
	cmd := exec.Command(os.Args[0], local.Args...)
	cmd.Env = append(os.Environ(), "RBD_TEST_MAIN=1")
	for k := range local.Env {
		v, known := values[k]
		require.True(t, known, "the configuration sets %s, which rbd mcp does not read", k)
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	n := 0
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		require.Contains(t, page, "| `"+tool.Name+"` |", "mcp.md's table of rbd's tools has no row for %s", tool.Name)
		n++
	}
	require.Equal(t, 15, n, "with --mcp-approvals, every tool")

	remote := cfg.MCPServers["rbd-remote"]
	require.Equal(t, "http", remote.Type)
	require.True(t, strings.HasSuffix(remote.URL, "/mcp"), remote.URL)
	scheme, _, ok := strings.Cut(remote.Headers["Authorization"], " ")
	require.True(t, ok)
	require.Equal(t, "Bearer", scheme)
	overHTTP, err := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: d.server + "/mcp", DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: withToken{"tok-person"}},
	}, nil)
	require.NoError(t, err)
	defer overHTTP.Close()
	var me apitype.WhoamiResponse
	use(t, ctx, overHTTP, "whoami", nil, &me)
	require.Equal(t, "alice", me.Actor)
	require.True(t, me.MCPApprovals)
}
