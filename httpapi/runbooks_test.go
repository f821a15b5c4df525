package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

const chain = `(t.echo :v $who :as @first)
(t.echo :v @first.v :as @second)
`

func TestSubmitRepeatConflictAndComplete(t *testing.T) {
	b := setup(t)
	req := apitype.SubmitRequest{Source: chain, Filename: "chain.rbk", Inputs: map[string]any{"who": "ada"}, IdempotencyKey: "order-1"}
	first, err := b.client.Submit(b.ctx, req)
	require.NoError(t, err)
	require.True(t, first.Created)

	// The same key and request: the same runbook, 200 instead of 201.
	body, _ := json.Marshal(req)
	status, out := b.raw(t, "POST", "/v1/runbooks", string(body), "Idempotency-Key", "order-1")
	require.Equal(t, http.StatusOK, status, out)
	require.Contains(t, out, `"created":false`)
	require.Contains(t, out, first.ID.String())
	// It says so: nothing new runs.
	require.Regexp(t, `"message":"already submitted as `+first.ID.String()+` \((executing|complete)\)"`, out)
	require.Equal(t, "chain", first.Name, "named after its file")
	require.NotContains(t, func() string { b, _ := json.Marshal(first); return string(b) }(), "message", "a new runbook has no message")

	// The same key for another request is refused.
	req.Inputs = map[string]any{"who": "bob"}
	_, err = b.client.Submit(b.ctx, req)
	requireAPIError(t, err, http.StatusConflict, httpapi.CodeConflict, `idempotency key "order-1" was used for another request`)

	v := b.waitFor(t, first.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	require.JSONEq(t, `{"v":"ada"}`, string(v.Outcomes["second"]))
	require.Empty(t, v.BlockedOn)
	require.Len(t, v.Steps, 2)

	evs, err := b.client.Events(b.ctx, first.ID.String(), 0)
	require.NoError(t, err)
	require.Equal(t, rbtype.EventRunbookSubmitted, evs[0].Type)
	require.Equal(t, rbtype.EventRunbookCompleted, evs[len(evs)-1].Type)
	// after= continues where a reader stopped.
	rest, err := b.client.Events(b.ctx, first.ID.String(), evs[0].ID)
	require.NoError(t, err)
	require.Equal(t, evs[1:], rest)
	status, out = b.raw(t, "GET", "/v1/runbooks/"+first.ID.String()+"/events?limit=1", "")
	require.Equal(t, http.StatusOK, status)
	var page apitype.EventsResponse
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page.Events, 1)
}

func TestSubmitRefusesBadSourcesPlansAndBodies(t *testing.T) {
	b := setup(t)
	// A source that does not compile: 422 with the compiler's diagnostics.
	_, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.ecko :v \"x\")\n", Filename: "typo.rbk"})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
	require.Equal(t, httpapi.CodeCompileFailed, string(apiErr.Code))
	require.Len(t, apiErr.Diagnostics, 1)
	d := apiErr.Diagnostics[0]
	require.Equal(t, "E010", string(d.Code))
	require.Equal(t, "typo.rbk", d.Range.Filename)
	require.Equal(t, 1, d.Range.Start.Line)
	require.Contains(t, d.Suggestions, "t.echo")

	status, out := b.raw(t, "POST", "/v1/runbooks", `{"source": "(t.echo :v \"x\")",}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, out, `"code":"MALFORMED_JSON"`)
	require.Contains(t, out, "invalid JSON at line 1, column 33")

	cases := []struct{ body, code, message string }{
		{``, httpapi.CodeMalformedJSON, "the body is empty"},
		{`[1]`, httpapi.CodeMalformedJSON, "the body must be a JSON object, not a JSON array"},
		{`{"source": 5}`, httpapi.CodeMalformedJSON, `field \"source\" must be a string, not a JSON number`},
		{`{"sauce": "x"}`, httpapi.CodeMalformedJSON, `unknown field \"sauce\"`},
		{`{} {}`, httpapi.CodeMalformedJSON, "more than one JSON value"},
		{`{}`, httpapi.CodeInvalidRequest, `needs \"source\" (runbook text) or \"plan\"`},
		{`{"source": "x", "plan": {}}`, httpapi.CodeInvalidRequest, `not both`},
		{`{"source": "(t.echo :v $v)", "inputs": {"v": 1}}`, httpapi.CodeInvalidRequest, "input $v"},
		{`{"source": "(t.echo :v \"x\")", "mode": "fast"}`, httpapi.CodeInvalidRequest, `mode \"fast\"`},
		{`{"plan": {"version": 1}}`, httpapi.CodeInvalidPlan, "the plan cannot be run"},
	}
	for _, c := range cases {
		status, out := b.raw(t, "POST", "/v1/runbooks", c.body)
		want := http.StatusBadRequest
		if c.code == httpapi.CodeInvalidPlan {
			want = http.StatusUnprocessableEntity
		}
		require.Equal(t, want, status, "%s → %s", c.body, out)
		require.Contains(t, out, `"code":"`+c.code+`"`, c.body)
		require.Contains(t, out, c.message, c.body)
	}

	status, out = b.raw(t, "POST", "/v1/runbooks", `{"source": "`+strings.Repeat("x", 70<<10)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Contains(t, out, `"code":"BODY_TOO_LARGE"`)

	status, out = b.raw(t, "POST", "/v1/runbooks", `{"source": "(t.echo :v \"x\")"}`, "Idempotency-Key", strings.Repeat("k", 256))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Contains(t, out, "longer than 255 bytes")
}

func TestSubmitAPlan(t *testing.T) {
	b := setup(t)
	plan, diags := compiler.CompileSource("chain.rbk", []byte(chain), b.cat)
	require.False(t, diags.HasErrors(), diags.Error())
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Plan: plan.JSON(), Inputs: map[string]any{"who": "eve"}})
	require.NoError(t, err)
	require.True(t, sub.Created)
	v := b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	require.JSONEq(t, `{"v":"eve"}`, string(v.Outcomes["second"]))

	// A plan edited after compiling no longer matches its hash.
	tampered := strings.Replace(string(plan.JSON()), `"first"`, `"premier"`, 1)
	_, err = b.client.Submit(b.ctx, apitype.SubmitRequest{Plan: json.RawMessage(tampered), Inputs: map[string]any{"who": "eve"}})
	requireAPIError(t, err, http.StatusUnprocessableEntity, httpapi.CodeInvalidPlan, "plan_hash")
}

func TestGatesCancelExtendAndList(t *testing.T) {
	b := setup(t)
	gated, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.approve :v \"ok\" :as @sign)\n"})
	require.NoError(t, err)
	v := b.waitFor(t, gated.ID.String(), "awaiting approval", stateIs("awaiting_approval"))
	require.Len(t, v.BlockedOn, 1)
	require.Equal(t, "sign", v.BlockedOn[0].Step)
	require.Equal(t, apitype.BlockedRequiresApproval, v.BlockedOn[0].Reason)
	g := v.BlockedOn[0].Gate
	require.NotNil(t, g, "a gate says what it guards")
	require.Equal(t, apitype.GateView{Verb: "t.approve", Risk: rbtype.RiskLow, SideEffects: rbtype.SideEffectsExternalCall,
		Args: map[string]any{"v": "ok"}, Why: apitype.GateVerb, Since: g.Since}, *g)
	require.WithinDuration(t, time.Now(), g.Since, time.Minute)

	_, err = b.client.Approve(b.ctx, gated.ID.String(), "nope", apitype.DecisionRequest{By: "ops"})
	requireAPIError(t, err, http.StatusNotFound, httpapi.CodeNotFound, `no step "nope"`)
	d, err := b.client.Approve(b.ctx, gated.ID.String(), "sign", apitype.DecisionRequest{By: "ops@example.com", Comment: "checked"})
	require.NoError(t, err)
	require.Equal(t, rbtype.GateApproved, d.Decision)
	v = b.waitFor(t, gated.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	require.Equal(t, "ops@example.com", v.Steps[0].GateDecision.By)
	// Deciding again: the step no longer waits.
	_, err = b.client.Reject(b.ctx, gated.ID.String(), "sign", apitype.DecisionRequest{By: "ops"})
	requireAPIError(t, err, http.StatusConflict, httpapi.CodeConflict, "not waiting for approval")

	rejected, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.approve :v \"no\" :as @sign)\n"})
	require.NoError(t, err)
	b.waitFor(t, rejected.ID.String(), "awaiting approval", stateIs("awaiting_approval"))
	d, err = b.client.Reject(b.ctx, rejected.ID.String(), "sign", apitype.DecisionRequest{By: "ops", Comment: "not today"})
	require.NoError(t, err)
	require.Equal(t, rbtype.GateRejected, d.Decision)
	v = b.waitFor(t, rejected.ID.String(), "failed", statusIs(rbtype.RunbookFailed))
	require.Equal(t, rbtype.CodePolicyDenied, v.Error.Code)

	// A parked runbook grows, then is cancelled.
	parked, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @w)\n"})
	require.NoError(t, err)
	b.waitFor(t, parked.ID.String(), "parked", stateIs("parked"))
	x, err := b.client.Extend(b.ctx, parked.ID.String(), apitype.ExtendRequest{Source: "(t.echo :v @w.answer :as @after)\n"})
	require.NoError(t, err)
	require.Equal(t, []string{"after"}, x.Steps)
	require.Equal(t, 2, x.Version)
	_, err = b.client.Extend(b.ctx, parked.ID.String(), apitype.ExtendRequest{Source: "(t.echo :v @nope.answer)\n"})
	requireAPIError(t, err, http.StatusUnprocessableEntity, httpapi.CodeCompileFailed, "error")
	c, err := b.client.Cancel(b.ctx, parked.ID.String(), apitype.CancelRequest{By: "ops"})
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookCancelled, c.Status)
	v, err = b.client.Get(b.ctx, parked.ID.String())
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookCancelled, v.Status)
	_, err = b.client.Extend(b.ctx, parked.ID.String(), apitype.ExtendRequest{Source: "(t.echo :v \"late\")\n"})
	requireAPIError(t, err, http.StatusConflict, httpapi.CodeConflict, "only a running runbook can be extended")
	_, err = b.client.Cancel(b.ctx, gated.ID.String(), apitype.CancelRequest{By: "ops"})
	requireAPIError(t, err, http.StatusConflict, httpapi.CodeConflict, "already complete")

	// Newest first, paged, filtered.
	page, err := b.client.List(b.ctx, client.ListRequest{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{parked.ID.String(), rejected.ID.String()}, ids(page))
	require.NotEmpty(t, page.Next)
	page, err = b.client.List(b.ctx, client.ListRequest{Limit: 2, After: page.Next})
	require.NoError(t, err)
	require.Equal(t, []string{gated.ID.String()}, ids(page))
	require.Empty(t, page.Next)
	page, err = b.client.List(b.ctx, client.ListRequest{Status: rbtype.RunbookFailed})
	require.NoError(t, err)
	require.Equal(t, []string{rejected.ID.String()}, ids(page))
	require.Equal(t, rbtype.CodePolicyDenied, page.Runbooks[0].Error.Code)
	_, err = b.client.List(b.ctx, client.ListRequest{Status: "sleepy"})
	requireAPIError(t, err, http.StatusBadRequest, httpapi.CodeInvalidRequest, `status "sleepy" is not one of`)
	_, err = b.client.List(b.ctx, client.ListRequest{After: "garbage"})
	requireAPIError(t, err, http.StatusBadRequest, httpapi.CodeInvalidRequest, "not a page cursor")
	status, _ := b.raw(t, "GET", "/v1/runbooks?limit=0", "")
	require.Equal(t, http.StatusBadRequest, status)
}

func TestErrorsAreJSONWithFittingStatus(t *testing.T) {
	b := setup(t)
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/runbooks/not-a-uuid", http.StatusBadRequest, httpapi.CodeInvalidRequest},
		{"GET", "/v1/runbooks/6f1c1f43-3d7e-4b59-9a3c-4bb0d6e7a001", http.StatusNotFound, httpapi.CodeNotFound},
		{"GET", "/v1/runbooks/6f1c1f43-3d7e-4b59-9a3c-4bb0d6e7a001/events", http.StatusNotFound, httpapi.CodeNotFound},
		{"POST", "/v1/runbooks/6f1c1f43-3d7e-4b59-9a3c-4bb0d6e7a001/cancel", http.StatusNotFound, httpapi.CodeNotFound},
		{"DELETE", "/v1/runbooks", http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed},
		{"GET", "/v1/notifications", http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed},
		{"GET", "/v2/whatever", http.StatusNotFound, httpapi.CodeNotFound},
	}
	for _, c := range cases {
		status, out := b.raw(t, c.method, c.path, "")
		require.Equal(t, c.status, status, "%s %s: %s", c.method, c.path, out)
		var eb apitype.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(out), &eb), out)
		require.Equal(t, c.code, eb.Error.Code, out)
		require.NotEmpty(t, eb.Error.Message)
	}
}

func TestTokensGuardTheAPIButNotHealthOrWebhook(t *testing.T) {
	b := setup(t)
	for _, auth := range []string{"", "Bearer wrong", "Basic " + testToken, "Bearer"} {
		req, err := http.NewRequestWithContext(b.ctx, "GET", b.srv.URL+"/v1/runbooks", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Authorization: %q", auth)
		require.Equal(t, `Bearer realm="rbd"`, resp.Header.Get("WWW-Authenticate"))
	}
	noToken := &client.Client{BaseURL: b.srv.URL}
	_, err := noToken.List(b.ctx, client.ListRequest{})
	requireAPIError(t, err, http.StatusUnauthorized, httpapi.CodeUnauthorized, "API token is required")
	// Either configured token works (rotation).
	old := &client.Client{BaseURL: b.srv.URL, Token: "old-token"}
	_, err = old.List(b.ctx, client.ListRequest{})
	require.NoError(t, err)

	for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		resp, err := http.Get(b.srv.URL + path)
		require.NoError(t, err)
		body := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.JSONEq(t, want, body)
	}
	// Metrics name the runtime's and the API's series. The tokens name
	// tenants, so they need a token with the metrics role (or admin).
	_, _ = b.client.List(b.ctx, client.ListRequest{})
	resp, err := http.Get(b.srv.URL + "/metrics")
	require.NoError(t, err)
	readAll(t, resp)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, err := http.NewRequest("GET", b.srv.URL+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-admin")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	metrics := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, metrics, `rbd_http_requests_total{code="200",route="GET /v1/runbooks"}`)
	require.Contains(t, metrics, `rbd_http_requests_total{code="401",route="GET /v1/runbooks"}`)
	require.Contains(t, metrics, "rbd_parked_invocations")
}

func requireAPIError(t *testing.T, err error, status int, code, message string) {
	t.Helper()
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, status, apiErr.StatusCode, apiErr.Error())
	require.Equal(t, code, string(apiErr.Code), apiErr.Error())
	require.Contains(t, apiErr.Message, message)
}

func ids(page *apitype.ListResponse) []string {
	out := make([]string, len(page.Runbooks))
	for i, r := range page.Runbooks {
		out[i] = r.ID.String()
	}
	return out
}

// POST /v1/runbooks/{id}/regenerate, as a client with a valid token might
// call it: the new runbook and its lineage, a repeat, and every bad
// request answered with its own status and nothing created.
func TestRegenerateOverHTTP(t *testing.T) {
	b := setup(t)
	first, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: chain, Inputs: map[string]any{"who": "ada"}})
	require.NoError(t, err)
	b.waitFor(t, first.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	path := "/v1/runbooks/" + first.ID.String() + "/regenerate"

	status, out := b.raw(t, "POST", path, `{"inputs": {"who": "grace"}, "by": "ops"}`)
	require.Equal(t, http.StatusCreated, status, out)
	var res apitype.RegenerateResponse
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.True(t, res.Created)
	require.Equal(t, apitype.LineageView{Root: first.ID, Parent: &first.ID, Generation: 1}, res.Lineage)
	v := b.waitFor(t, res.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	require.JSONEq(t, `{"v":"grace"}`, string(v.Outcomes["second"]))
	require.Equal(t, res.Lineage.Root, v.Lineage.Root)
	require.Equal(t, *res.Lineage.Parent, *v.Lineage.Parent)
	require.Equal(t, res.Lineage.Generation, v.Lineage.Generation)

	// The same request again: the same runbook, 200.
	status, out = b.raw(t, "POST", path, `{"inputs": {"who": "grace"}, "by": "ops"}`)
	require.Equal(t, http.StatusOK, status, out)
	require.Contains(t, out, res.ID.String())

	for _, c := range []struct {
		name, path, body string
		header           []string
		status           int
		code             string
	}{
		{"an input the plan does not take", path, `{"inputs": {"nope": 1}}`, nil, http.StatusBadRequest, httpapi.CodeInvalidRequest},
		{"a field the request has not", path, `{"input": {"who": "x"}}`, nil, http.StatusBadRequest, httpapi.CodeMalformedJSON},
		{"inputs that are not an object", path, `{"inputs": ["who"]}`, nil, http.StatusBadRequest, httpapi.CodeMalformedJSON},
		{"a NUL PostgreSQL cannot store", path, `{"inputs": {"who": "a\u0000b"}}`, nil, http.StatusBadRequest, httpapi.CodeInvalidRequest},
		{"an idempotency key too long", path, `{}`, []string{"Idempotency-Key", strings.Repeat("k", 300)}, http.StatusBadRequest, httpapi.CodeInvalidRequest},
		{"not a runbook id", "/v1/runbooks/nope/regenerate", `{}`, nil, http.StatusBadRequest, httpapi.CodeInvalidRequest},
		{"no such runbook", "/v1/runbooks/6f1c1f43-3d7e-4b59-9a3c-4bb0d6e7a001/regenerate", `{}`, nil, http.StatusNotFound, httpapi.CodeNotFound},
	} {
		status, out := b.raw(t, "POST", c.path, c.body, c.header...)
		require.Equal(t, c.status, status, "%s: %s", c.name, out)
		var eb apitype.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(out), &eb), out)
		require.Equal(t, c.code, eb.Error.Code, "%s: %s", c.name, out)
	}

	// A running runbook is not regenerated.
	parked, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: `(t.wait :as @w)`})
	require.NoError(t, err)
	_, err = b.client.Regenerate(b.ctx, parked.ID.String(), apitype.RegenerateRequest{})
	requireAPIError(t, err, http.StatusConflict, httpapi.CodeConflict, "regenerate it once it has finished")

	// Nothing the refused requests asked for was created.
	page, err := b.client.List(b.ctx, client.ListRequest{Limit: 100})
	require.NoError(t, err)
	require.Len(t, page.Runbooks, 3)
}
