package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// tenantTokens are the tokens setup adds for the tenant tests: two
// tenants, a reader without the submit and approve roles, an admin.
var tenantTokens = []string{
	"tok-acme tenant=acme actor=alice roles=read,submit,approve",
	"tok-globex tenant=globex actor=bob roles=read,submit,approve",
	"tok-reader tenant=acme actor=rita roles=read",
	"tok-admin tenant=ops actor=root roles=admin",
}

// Every token-checked route needs a role: a route added without one would
// be refused to everyone but admins, and the table would lie.
func TestEveryAPIRouteNeedsARole(t *testing.T) {
	b := setup(t)
	api := httpapi.New(httpapi.Config{Engine: b.engine})
	routes := httpapi.APIRoutes(api)
	require.NotEmpty(t, routes)
	roles := httpapi.RouteRoles()
	for _, r := range routes {
		require.Contains(t, roles, r, "route %s has no role", r)
	}
	for r := range roles {
		require.True(t, slices.Contains(routes, r), "the role table names %s, which is not a route", r)
	}
}

// Bad token lines are refused with the line's number, never granted more
// or less than written.
func TestParseTokens(t *testing.T) {
	ps, _, err := httpapi.ParseTokens([]string{"bare", "t2 tenant=acme actor=ci roles=read,submit"})
	require.NoError(t, err)
	require.Len(t, ps[0].ID, 32, "every token has a fingerprint")
	require.NotEqual(t, ps[0].ID, ps[1].ID)
	again, _, _ := httpapi.ParseTokens([]string{"bare"})
	require.Equal(t, ps[0].ID, again[0].ID, "the same token has the same fingerprint wherever it is read")
	require.NotContains(t, ps[0].ID, "bare")
	ps[0].ID, ps[1].ID = "", ""
	require.Equal(t, httpapi.Principal{Tenant: "default", Actor: "token-1",
		Roles: []httpapi.Role{httpapi.RoleRead, httpapi.RoleSubmit, httpapi.RoleApprove, httpapi.RoleNotify, httpapi.RoleAdmin}}, ps[0])
	require.Equal(t, httpapi.Principal{Tenant: "acme", Actor: "ci", Roles: []httpapi.Role{httpapi.RoleRead, httpapi.RoleSubmit}, NamedActor: true}, ps[1])
	for line, want := range map[string]string{
		"t tenant=Acme!":                      `token 1: tenant "Acme!" must be lower-case`,
		"t roles=read,root":                   `token 1: unknown role "root"`,
		"t team=ops":                          `token 1: unknown attribute "team"`,
		"t tenant":                            `token 1: "tenant" is not name=value`,
		"t roles=":                            `token 1: "roles=" is not name=value`,
		"t tenant=" + strings.Repeat("a", 65): "must be lower-case letters, digits",
	} {
		_, _, err := httpapi.ParseTokens([]string{line})
		require.ErrorContains(t, err, want, line)
	}
}

// docs/design/semantics.md section 1, as an attacker with a valid token would try it:
// every endpoint against acme's runbook, as acme (works), as globex (404:
// as if it did not exist), as acme's reader (403 for what needs a role it
// lacks) and as an admin (works).
func TestTenantsAndRolesOnEveryEndpoint(t *testing.T) {
	b := setup(t)
	as := func(token string) *client.Client {
		return &client.Client{BaseURL: b.srv.URL, Token: token, WebhookSecret: []byte(testSecret)}
	}
	acme, globex := as("tok-acme"), as("tok-globex")
	// A runbook of acme's, parked, with a gate after it.
	sub, err := acme.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @w) (t.approve :after @w :as @g)\n"})
	require.NoError(t, err)
	id := sub.ID.String()
	b.waitFor(t, id, "parked", stateIs("parked"))

	type call struct {
		method, path, body string
		role               httpapi.Role
	}
	calls := []call{
		{"GET", "/v1/runbooks/" + id, "", httpapi.RoleRead},
		{"GET", "/v1/runbooks/" + id + "/events", "", httpapi.RoleRead},
		{"GET", "/v1/runbooks/" + id + "/plan", "", httpapi.RoleRead},
		{"POST", "/v1/runbooks/" + id + "/steps", `{"source": "(t.echo :v \"x\")"}`, httpapi.RoleSubmit},
		{"POST", "/v1/runbooks/" + id + "/steps/g/approve", `{"by": "x"}`, httpapi.RoleApprove},
		{"POST", "/v1/runbooks/" + id + "/steps/g/reject", `{"by": "x"}`, httpapi.RoleApprove},
		{"POST", "/v1/runbooks/" + id + "/steps/w/resolve", `{"action": "complete"}`, httpapi.RoleApprove},
		{"POST", "/v1/runbooks/" + id + "/retry", `{}`, httpapi.RoleSubmit},
		{"POST", "/v1/runbooks/" + id + "/regenerate", `{}`, httpapi.RoleSubmit},
		{"POST", "/v1/runbooks/" + id + "/close", `{}`, httpapi.RoleSubmit},
		{"POST", "/v1/runbooks/" + id + "/cancel", `{}`, httpapi.RoleSubmit},
	}
	send := func(token string, c call) (int, string) {
		req, err := http.NewRequestWithContext(b.ctx, c.method, b.srv.URL+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out strings.Builder
		_, _ = fmt.Fprint(&out, resp.Status)
		return resp.StatusCode, out.String()
	}
	for _, c := range calls {
		name := c.method + " " + c.path
		status, _ := send("tok-globex", c)
		require.Equal(t, http.StatusNotFound, status, "another tenant: %s", name)
		status, _ = send("tok-reader", c)
		if c.role == httpapi.RoleRead {
			require.Equal(t, http.StatusOK, status, "a reader reads: %s", name)
		} else {
			require.Equal(t, http.StatusForbidden, status, "a reader may not: %s", name)
		}
	}
	// The owner and the admin get past the door: whatever the runbook's
	// state says (200, or 409 for what does not fit it), never 403 or 404.
	for _, token := range []string{"tok-acme", "tok-admin"} {
		for _, c := range calls[:len(calls)-1] { // cancel last, below
			status, _ := send(token, c)
			require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound}, status, "%s: %s %s", token, c.method, c.path)
		}
	}

	// Listing: each tenant sees its own; the admin sees all, or one.
	gsub, err := globex.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.echo :v \"g\")\n"})
	require.NoError(t, err)
	ids := func(c *client.Client, tenant string) []string {
		path := "/v1/runbooks"
		if tenant != "" {
			path += "?tenant=" + tenant
		}
		var page apitype.ListResponse
		status, body := b.rawAs(t, c.Token, "GET", path)
		require.Equal(t, http.StatusOK, status, body)
		require.NoError(t, jsonUnmarshal(body, &page))
		var out []string
		for _, r := range page.Runbooks {
			out = append(out, r.ID.String())
		}
		return out
	}
	require.Contains(t, ids(acme, ""), id)
	require.NotContains(t, ids(acme, ""), gsub.ID.String())
	require.NotContains(t, ids(acme, "globex"), gsub.ID.String(), "?tenant= is for admins only")
	require.NotContains(t, ids(globex, ""), id)
	require.Subset(t, ids(as("tok-admin"), ""), []string{id, gsub.ID.String()})
	require.Equal(t, []string{gsub.ID.String()}, ids(as("tok-admin"), "globex"))

	// The same request in two tenants is two runbooks, whatever key they
	// chose; a mistyped id does not suggest another tenant's.
	one, err := acme.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.echo :v \"same\")\n", IdempotencyKey: "order-1"})
	require.NoError(t, err)
	two, err := globex.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.echo :v \"same\")\n", IdempotencyKey: "order-1"})
	require.NoError(t, err)
	require.NotEqual(t, one.ID, two.ID)
	require.True(t, two.Created)
	_, err = globex.Get(b.ctx, one.ID.String())
	requireAPIError(t, err, http.StatusNotFound, httpapi.CodeNotFound, "no runbook "+one.ID.String())
	require.NotContains(t, err.Error(), "did you mean")

	// Cancel, by the owner, ends it; the other tenant still cannot see it.
	status, body := send("tok-acme", calls[len(calls)-1])
	require.Equal(t, http.StatusOK, status, body)
	v := b.waitFor(t, id, "cancelled", statusIs(rbtype.RunbookCancelled))
	require.Equal(t, rbtype.RunbookCancelled, v.Status)
}

// rawAs makes a request with a token of the test's choosing.
func (b *testBundle) rawAs(t *testing.T, token, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, method, b.srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func jsonUnmarshal(body string, v any) error { return json.Unmarshal([]byte(body), v) }

// A webhook secret of a tenant ends only that tenant's waits: a
// notification for another tenant's correlation key is answered as one
// for a key nobody waits on (202, kept in its own tenant's namespace, and
// the step keeps waiting), its own is accepted; a secret of no tenant ends
// any wait. A heartbeat is held to the same rule (404, as for no wait).
func TestTenantWebhookSecrets(t *testing.T) {
	b := setup(t)
	secrets, tenants, err := httpapi.ParseWebhookSecrets([]string{"whsec-any", "whsec-acme tenant=acme"})
	require.NoError(t, err)
	require.Equal(t, []string{"", "acme"}, tenants)
	_, _, err = httpapi.ParseWebhookSecrets([]string{"whsec tenant=Nope!"})
	require.ErrorContains(t, err, `secret 1: "tenant=Nope!" is not tenant=T`)
	api := httpapi.New(httpapi.Config{Engine: b.engine, Tokens: tenantTokens, WebhookSecrets: secrets, WebhookTenants: tenants})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	park := func(token string) (id, key string) {
		c := &client.Client{BaseURL: srv.URL, Token: token}
		sub, err := c.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @w)\n"})
		require.NoError(t, err)
		v := b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
		return sub.ID.String(), v.BlockedOn[0].CorrelationKey
	}
	acmeID, acmeKey := park("tok-acme")
	globexID, globexKey := park("tok-globex")
	as := func(secret string) *client.Client {
		return &client.Client{BaseURL: srv.URL, WebhookSecret: []byte(secret)}
	}
	answer := func(key string) apitype.NotificationRequest {
		return apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: []byte(`{"answer":"yes"}`)}
	}

	res, err := as("whsec-acme").Notify(b.ctx, answer(globexKey))
	require.NoError(t, err)
	require.Equal(t, "accepted", res.Status)
	_, err = as("whsec-acme").Notify(b.ctx, apitype.NotificationRequest{CorrelationKey: globexKey, Status: rbtype.OutcomeHeartbeat, Extend: "PT1H"})
	requireAPIError(t, err, http.StatusNotFound, httpapi.CodeNotFound, "no step waits on correlation key")
	res, err = as("whsec-acme").Notify(b.ctx, answer(acmeKey))
	require.NoError(t, err)
	require.Equal(t, "accepted", res.Status)
	b.waitFor(t, acmeID, "complete", statusIs(rbtype.RunbookComplete))
	v := b.waitFor(t, globexID, "still parked", stateIs("parked"))
	require.Equal(t, rbtype.RunbookExecuting, v.Status)

	// The secret of no tenant ends globex's wait.
	_, err = as("whsec-any").Notify(b.ctx, answer(globexKey))
	require.NoError(t, err)
	b.waitFor(t, globexID, "complete", statusIs(rbtype.RunbookComplete))
}

// A token that names its actor is who the ledger records; a request's
// "by" is kept as a note. A token that names none leaves "by" as it is.
func TestTheTokensActorIsWhoActed(t *testing.T) {
	b := setup(t)
	acme := &client.Client{BaseURL: b.srv.URL, Token: "tok-acme"}
	sub, err := acme.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.approve :as @g)\n", Actor: "someone-else"})
	require.NoError(t, err)
	id := sub.ID.String()
	b.waitFor(t, id, "at the gate", stateIs("awaiting_approval"))
	_, err = acme.Approve(b.ctx, id, "g", apitype.DecisionRequest{By: "mallory", Comment: "ok"})
	require.NoError(t, err)
	b.waitFor(t, id, "complete", statusIs(rbtype.RunbookComplete))
	evs, err := acme.Events(b.ctx, id, 0)
	require.NoError(t, err)
	data := map[rbtype.EventType]string{}
	for _, e := range evs {
		data[e.Type] = string(e.Data)
	}
	require.JSONEq(t, `{"by":"alice","comment":"ok","note":"mallory"}`, data[rbtype.EventGateApproved])
	require.Contains(t, data[rbtype.EventRunbookSubmitted], `"actor":"alice"`)
	require.Contains(t, data[rbtype.EventRunbookSubmitted], `"note":"someone-else"`)

	// The bare test token names no actor: "by" stands.
	sub, err = b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.approve :as @h)\n"})
	require.NoError(t, err)
	b.waitFor(t, sub.ID.String(), "at the gate", stateIs("awaiting_approval"))
	_, err = b.client.Approve(b.ctx, sub.ID.String(), "h", apitype.DecisionRequest{By: "ops"})
	require.NoError(t, err)
	evs, err = b.client.Events(b.ctx, sub.ID.String(), 0)
	require.NoError(t, err)
	for _, e := range evs {
		if e.Type == rbtype.EventGateApproved {
			require.JSONEq(t, `{"by":"ops","comment":""}`, string(e.Data))
		}
	}
}
