package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// mcpTokens are the MCP tests' tokens: an agent of acme that may submit
// and notify but not approve, a person of acme who may approve, an agent
// of globex, and a reader.
var mcpTokens = []string{
	"tok-agent tenant=acme actor=agent-7 roles=read,submit,notify",
	"tok-approver tenant=acme actor=alice roles=read,submit,approve,notify",
	"tok-globex tenant=globex actor=bob roles=read,submit,notify",
	"tok-reader tenant=acme actor=rita roles=read",
}

// mcpAPI is an API over the test's engine with mcpTokens, served over
// HTTP, with or without --mcp-approvals.
func mcpAPI(t *testing.T, b *testBundle, approvals bool) (*httpapi.Server, *httptest.Server) {
	t.Helper()
	api := httpapi.New(httpapi.Config{
		Engine: b.engine, Catalogue: b.cat, Tokens: mcpTokens, WebhookSecrets: [][]byte{[]byte(testSecret)},
		MaxBody: testMaxBody, MCPApprovals: approvals, Version: "test",
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, srv
}

// inMemory connects the SDK's client to the daemon's tools for a token,
// over the SDK's in-memory transport.
func inMemory(t *testing.T, api *httpapi.Server, token string) *mcp.ClientSession {
	t.Helper()
	srv, err := api.MCPServer(token)
	require.NoError(t, err)
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// overHTTP connects the SDK's client to POST /mcp with a bearer token,
// over the Streamable HTTP transport.
func overHTTP(t *testing.T, srv *httptest.Server, token string) (*mcp.ClientSession, error) {
	t.Helper()
	transport := &mcp.StreamableClientTransport{
		Endpoint: srv.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}},
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// bearer adds a token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// callTool calls a tool and decodes its structured result into out
// (when not nil), returning whether it was an error result.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "calling %s", name)
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, out), "%s answered %s", name, raw)
	}
	return res
}

// refusal is a tool's error result for an API refusal.
type refusal struct {
	Status int          `json:"status"`
	Error  client.Error `json:"error"`
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// An agent's exchange through the daemon's tools: submit a runbook that
// parks, read what would move it, send the notification, see it
// complete; over the in-memory transport and over POST /mcp.
func TestMCPAgentRunsARunbookToCompletion(t *testing.T) {
	b := setup(t)
	api, srv := mcpAPI(t, b, false)
	httpSession, err := overHTTP(t, srv, "tok-agent")
	require.NoError(t, err)
	for name, cs := range map[string]*mcp.ClientSession{"in memory": inMemory(t, api, "tok-agent"), "POST /mcp": httpSession} {
		t.Run(name, func(t *testing.T) {
			var sub apitype.SubmitResponse
			res := callTool(t, cs, "submit", map[string]any{
				"source": "(t.wait :as @docs)\n(t.echo :v @docs.answer :as @after)\n", "filename": "agent.rbk",
				"idempotency_key": "agent-" + name,
			}, &sub)
			require.False(t, res.IsError, toolText(res))
			require.True(t, sub.Created)

			// The same key again: the same runbook.
			var again apitype.SubmitResponse
			callTool(t, cs, "submit", map[string]any{"source": "(t.wait :as @docs)\n(t.echo :v @docs.answer :as @after)\n",
				"filename": "agent.rbk", "idempotency_key": "agent-" + name}, &again)
			require.Equal(t, sub.ID, again.ID)
			require.False(t, again.Created)

			b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
			var next struct {
				State       string                `json:"state"`
				BlockedOn   []apitype.BlockedView `json:"blocked_on"`
				NextActions []apitype.ActionView  `json:"next_actions"`
			}
			res = callTool(t, cs, "next_actions", map[string]any{"id": sub.ID.String()}, &next)
			require.False(t, res.IsError, toolText(res))
			require.Equal(t, "parked", next.State)
			require.Len(t, next.NextActions, 1)
			require.Equal(t, apitype.ActionNotify, next.NextActions[0].Kind)
			require.Equal(t, "docs", next.NextActions[0].Step)
			require.Len(t, next.BlockedOn, 1)
			key := next.BlockedOn[0].CorrelationKey
			require.NotEmpty(t, key)

			var ack apitype.NotificationResponse
			res = callTool(t, cs, "notify", map[string]any{"correlation_key": key, "status": "completed", "result": map[string]any{"answer": "filed"}}, &ack)
			require.False(t, res.IsError, toolText(res))
			require.Equal(t, "accepted", ack.Status)

			b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
			var view apitype.RunbookView
			res = callTool(t, cs, "status", map[string]any{"id": sub.ID.String()}, &view)
			require.False(t, res.IsError, toolText(res))
			require.Equal(t, rbtype.RunbookComplete, view.Status)
			require.JSONEq(t, `{"v":"filed"}`, string(view.Outcomes["after"]))

			var evs apitype.EventsResponse
			callTool(t, cs, "events", map[string]any{"id": sub.ID.String()}, &evs)
			require.NotEmpty(t, evs.Events)
			require.Equal(t, rbtype.EventRunbookSubmitted, evs.Events[0].Type)

			// The ledger says who: the token's actor.
			v, err := b.client.Get(b.ctx, sub.ID.String())
			require.NoError(t, err)
			require.Equal(t, rbtype.RunbookComplete, v.Status)
		})
	}
}

// Approving through MCP: only with --mcp-approvals, and only for a token
// with the approve role; a refusal does nothing.
func TestMCPApprovals(t *testing.T) {
	b := setup(t)

	// Without --mcp-approvals there is no approve tool, and a decision
	// marked as coming through MCP is refused.
	api, _ := mcpAPI(t, b, false)
	cs := inMemory(t, api, "tok-approver")
	tools := toolNames(t, cs)
	require.NotContains(t, tools, "approve")
	require.NotContains(t, tools, "reject")
	require.Contains(t, tools, "submit")
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "approve", Arguments: map[string]any{"id": "x", "step": "y"}})
	require.ErrorContains(t, err, "approve")

	var sub apitype.SubmitResponse
	callTool(t, cs, "submit", map[string]any{"source": "(t.approve :v \"ok\" :as @sign)\n"}, &sub)
	b.waitFor(t, sub.ID.String(), "awaiting approval", stateIs("awaiting_approval"))
	status, out := b.raw(t, "POST", "/v1/runbooks/"+sub.ID.String()+"/steps/sign/approve", `{"by": "alice"}`, httpapi.ViaHeader, "mcp")
	require.Equal(t, http.StatusForbidden, status, out)
	require.Contains(t, out, "--mcp-approvals")

	// With it, the tools exist; a token without approve is refused as the
	// route refuses it, and the gate still waits.
	api, srv := mcpAPI(t, b, true)
	agent, err := overHTTP(t, srv, "tok-agent")
	require.NoError(t, err)
	require.Contains(t, toolNames(t, agent), "approve")
	var refused refusal
	res := callTool(t, agent, "approve", map[string]any{"id": sub.ID.String(), "step": "sign"}, &refused)
	require.True(t, res.IsError)
	require.Equal(t, http.StatusForbidden, refused.Status)
	require.Equal(t, client.CodeForbidden, refused.Error.Code)
	require.Contains(t, refused.Error.Message, "lacks the approve role")
	v, err := b.client.Get(b.ctx, sub.ID.String())
	require.NoError(t, err)
	step, _ := v.Step("sign")
	require.Equal(t, rbtype.StepWaitingApproval, step.Status, "a refused approval decided nothing")

	// The approver may, and the ledger names the token's actor.
	approver := inMemory(t, api, "tok-approver")
	var decided apitype.DecisionResponse
	res = callTool(t, approver, "approve", map[string]any{"id": sub.ID.String(), "step": "sign", "comment": "checked"}, &decided)
	require.False(t, res.IsError, toolText(res))
	require.Equal(t, rbtype.GateApproved, decided.Decision)
	v = b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	step, _ = v.Step("sign")
	require.Equal(t, "alice", step.GateDecision.By)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	return names
}

// Each tool is checked as its route: the token's roles and tenant.
func TestMCPToolsAreCheckedAsTheirRoutes(t *testing.T) {
	b := setup(t)
	api, srv := mcpAPI(t, b, false)
	acme := inMemory(t, api, "tok-agent")
	var sub apitype.SubmitResponse
	callTool(t, acme, "submit", map[string]any{"source": "(t.wait :as @w)\n"}, &sub)

	// Another tenant's runbook does not exist for globex.
	globex := inMemory(t, api, "tok-globex")
	var refused refusal
	res := callTool(t, globex, "status", map[string]any{"id": sub.ID.String()}, &refused)
	require.True(t, res.IsError)
	require.Equal(t, http.StatusNotFound, refused.Status)
	res = callTool(t, globex, "cancel", map[string]any{"id": sub.ID.String()}, &refused)
	require.True(t, res.IsError)
	require.Equal(t, http.StatusNotFound, refused.Status)

	// A reader may read but not submit, cancel or notify.
	reader := inMemory(t, api, "tok-reader")
	res = callTool(t, reader, "status", map[string]any{"id": sub.ID.String()}, nil)
	require.False(t, res.IsError, toolText(res))
	for tool, args := range map[string]map[string]any{
		"submit": {"source": "(t.echo :v \"x\")\n"},
		"cancel": {"id": sub.ID.String()},
		"notify": {"correlation_key": "k", "status": "completed"},
	} {
		refused = refusal{}
		res = callTool(t, reader, tool, args, &refused)
		require.True(t, res.IsError, tool)
		require.Equal(t, http.StatusForbidden, refused.Status, tool)
		require.Equal(t, client.CodeForbidden, refused.Error.Code, tool)
	}
	v, err := b.client.Get(b.ctx, sub.ID.String())
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookExecuting, v.Status, "nothing refused was done")

	// A notification for another tenant's wait ends nothing, and is
	// answered as one for a key nobody waits on: kept in globex's own
	// namespace, so the answer says nothing of acme's waits (docs/reliability.md).
	parked := b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
	res = callTool(t, globex, "notify", map[string]any{"correlation_key": parked.BlockedOn[0].CorrelationKey, "status": "completed", "result": map[string]any{}}, nil)
	require.False(t, res.IsError, toolText(res))
	require.Contains(t, toolText(res), "accepted")
	b.waitFor(t, sub.ID.String(), "still parked", stateIs("parked"))

	// whoami says who the token is; verbs lists the catalogue.
	var me apitype.WhoamiResponse
	callTool(t, acme, "whoami", nil, &me)
	require.Equal(t, apitype.WhoamiResponse{Tenant: "acme", Actor: "agent-7", ActorNamed: true, Roles: []rbtype.Role{"read", "submit", "notify"},
		Verbs: []string{"*"}, MaxRisk: rbtype.RiskHigh, Groups: []string{}}, me)
	var cat apitype.VerbsResponse
	callTool(t, acme, "verbs", map[string]any{"name": "t.approve"}, &cat)
	require.Len(t, cat.Verbs, 1)
	require.Equal(t, rbtype.GateHumanConfirm, cat.Verbs[0].Gate)

	// Without a token, /mcp is 401 before any tool runs.
	_, err = overHTTP(t, srv, "wrong")
	require.Error(t, err)
}

// Bad arguments are an error naming the argument, and reach no route; a
// source that does not compile answers its diagnostics; one over the
// body limit meets the daemon's limit.
func TestMCPBadInput(t *testing.T) {
	b := setup(t)
	api, srv := mcpAPI(t, b, false)
	cs := inMemory(t, api, "tok-agent")
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"status", map[string]any{}, `missing properties: ["id"]`},
		{"status", map[string]any{"id": 42}, `/properties/id`},
		{"notify", map[string]any{"correlation_key": "k"}, `missing properties: ["status"]`},
		{"notify", map[string]any{"correlation_key": "k", "status": "done"}, `/properties/status`},
		{"submit", map[string]any{"source": "(t.echo)", "mode": "yolo"}, `/properties/mode`},
		{"submit", map[string]any{"sauce": "(t.echo)"}, `sauce`},
		{"submit", map[string]any{}, `give "source"`},
		{"events", map[string]any{"id": "x", "after": "soon"}, `/properties/after`},
	} {
		res := callTool(t, cs, c.tool, c.args, nil)
		require.True(t, res.IsError, "%s %v", c.tool, c.args)
		require.Contains(t, toolText(res), c.want, "%s %v", c.tool, c.args)
	}

	var failed refusal
	res := callTool(t, cs, "submit", map[string]any{"source": "(t.ecko :v \"x\")\n", "filename": "typo.rbk"}, &failed)
	require.True(t, res.IsError)
	require.Equal(t, http.StatusUnprocessableEntity, failed.Status)
	require.Equal(t, client.CodeCompileFailed, failed.Error.Code)
	require.Len(t, failed.Error.Diagnostics, 1)
	require.Equal(t, "E010", failed.Error.Diagnostics[0].Code)
	require.Equal(t, "typo.rbk", failed.Error.Diagnostics[0].Range.File)

	// The test daemon's --max-body is 64 KiB.
	huge := "(t.echo :v \"" + strings.Repeat("x", 70<<10) + "\")\n"
	httpSession, err := overHTTP(t, srv, "tok-agent")
	require.NoError(t, err)
	for name, session := range map[string]*mcp.ClientSession{"in memory": cs, "POST /mcp": httpSession} {
		var tooLarge refusal
		res = callTool(t, session, "submit", map[string]any{"source": huge}, &tooLarge)
		require.True(t, res.IsError, name)
		require.Equal(t, http.StatusRequestEntityTooLarge, tooLarge.Status, name)
		require.Equal(t, client.CodeBodyTooLarge, tooLarge.Error.Code, name)
	}
	page, err := b.client.List(b.ctx, client.ListRequest{Tenant: "acme"})
	require.NoError(t, err)
	require.Empty(t, page.Runbooks, "nothing refused was stored")

	// Far past the limit, /mcp itself refuses the body.
	status, out := b.rawTo(t, srv.URL, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"submit","arguments":{"source":"`+strings.Repeat("x", 200<<10)+`"}}}`,
		"Authorization", "Bearer tok-agent", "Accept", "application/json, text/event-stream")
	require.Equal(t, http.StatusRequestEntityTooLarge, status, out)
}

// rawTo sends a request as written to a server, with only the headers
// given, and returns the status and body.
func (b *testBundle) rawTo(t *testing.T, base, method, path, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	waitToSendLargeBody(req, len(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp.StatusCode, readAll(t, resp)
}
