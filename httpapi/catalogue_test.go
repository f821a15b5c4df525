package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// GET /v1/whoami answers any valid token, whatever its roles; GET
// /v1/verbs needs read, and names the verbs with what each does.
func TestWhoamiAndVerbs(t *testing.T) {
	b := setup(t)
	api := httpapi.New(httpapi.Config{Engine: b.engine, Catalogue: b.cat, MCPApprovals: true,
		Tokens: []string{"tok-bare", "tok-decider tenant=acme actor=alice roles=approve", "tok-reader tenant=acme roles=read"}})
	srv := httptest.NewServer(api)
	defer srv.Close()
	get := func(token, path string, out any) int {
		status, body := b.rawTo(t, srv.URL, "GET", path, "", "Authorization", "Bearer "+token)
		if out != nil && status == http.StatusOK {
			require.NoError(t, json.Unmarshal([]byte(body), out), body)
		}
		return status
	}

	var me apitype.WhoamiResponse
	require.Equal(t, http.StatusOK, get("tok-decider", "/v1/whoami", &me))
	require.Equal(t, apitype.WhoamiResponse{Tenant: "acme", Actor: "alice", ActorNamed: true, Roles: []rbtype.Role{"approve"}, Verbs: []string{"*"},
		MaxRisk: "high", MCPApprovals: true, Groups: []string{}}, me)
	require.Equal(t, http.StatusOK, get("tok-bare", "/v1/whoami", &me))
	require.Equal(t, apitype.WhoamiResponse{Tenant: "default", Actor: "token-1", Roles: []rbtype.Role{"read", "submit", "approve", "notify", "admin"},
		Verbs: []string{"*"}, MaxRisk: "high", MCPApprovals: true, Groups: []string{}}, me)
	require.Equal(t, http.StatusOK, get("tok-reader", "/v1/whoami", &me))
	require.Equal(t, "token-3", me.Actor)
	require.False(t, me.ActorNamed)
	require.Equal(t, http.StatusUnauthorized, get("nope", "/v1/whoami", nil))

	// The open API: anyone, every tenant.
	open := httptest.NewServer(httpapi.New(httpapi.Config{Engine: b.engine}))
	defer open.Close()
	status, body := b.rawTo(t, open.URL, "GET", "/v1/whoami", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"tenant":"default","actor":"anonymous","actor_named":false,"roles":["admin"],"verbs":["*"],"max_risk":"high","mcp_approvals":false,"groups":[]}`, body)
	status, body = b.rawTo(t, open.URL, "GET", "/v1/verbs", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"verbs":[]}`, body, "a daemon without --verbs lists none")

	var cat apitype.VerbsResponse
	require.Equal(t, http.StatusForbidden, get("tok-decider", "/v1/verbs", nil), "verbs needs read")
	require.Equal(t, http.StatusOK, get("tok-reader", "/v1/verbs", &cat))
	names := map[string]apitype.VerbInfo{}
	for _, v := range cat.Verbs {
		names[v.Name] = v
	}
	require.Len(t, names, len(b.cat.Names()), "every verb of the catalogue")
	require.Equal(t, "human_confirm", string(names["t.wire"].Gate), "a high-risk verb's gate is the one that applies")
	require.Equal(t, "human_process", string(names["t.wait"].SideEffects))
	require.Equal(t, "durable", string(names["t.wait"].Kind))
	require.Equal(t, "human_confirm", string(names["t.approve"].Gate))
	require.Equal(t, "low", string(names["t.echo"].Risk))
	require.Equal(t, "opaque", string(names["t.echo"].Level))
	require.JSONEq(t, `{"properties": {"v": {"type": "string"}}}`, string(names["t.echo"].InputSchema))
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, names["t.echo"].Hash)
	def, ok := b.cat.Lookup("t.echo")
	require.True(t, ok)
	require.Equal(t, def.Hash, names["t.echo"].Hash, "the hash plans compiled against it record")

	require.Equal(t, http.StatusOK, get("tok-reader", "/v1/verbs?name=t.wait", &cat))
	require.Len(t, cat.Verbs, 1)
	require.Equal(t, "t.wait", cat.Verbs[0].Name)
	status, body = b.rawTo(t, srv.URL, "GET", "/v1/verbs?name=t.wiat", "", "Authorization", "Bearer tok-reader")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, `no verb \"t.wiat\" this token may use (did you mean \"t.wait\"?)`)
}
