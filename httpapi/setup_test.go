package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const testVerbs = `
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      v: {type: string}
  output_schema:
    properties:
      v: {type: string}
- name: wait
  domain: t
  policy_tags: [client_request]
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H}
  output_schema:
    properties:
      answer: {type: string}
- name: approve
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
- name: down
  domain: t
  execution: {kind: sync, handler: core.fail, params: {code: DEPENDENCY_UNAVAILABLE}, side_effects: none}
- name: count
  domain: t
  execution: {kind: sync, handler: core.echo, params: {result: {count: 5}}, side_effects: none}
- name: wire
  domain: t
  risk: high
  execution: {kind: sync, handler: http.call, params: {url: "https://bank.example/v1/wires"}, side_effects: external_call, level: guarded}
- name: hurry
  domain: t
  policy_tags: [client_request]
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT0.3S, on_timeout: escalate}
`

const (
	testToken  = "test-token-1"
	testSecret = "whsec-test"
)

// testBundle is a running engine behind the API, and clients for it.
type testBundle struct {
	ctx    context.Context
	store  *durable.Store
	engine *runtime.Engine
	cat    *registry.Catalogue
	srv    *httptest.Server
	client *client.Client // with the token and the webhook secret
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	store := pgtest.Store(t)
	handlers := runtime.NewHandlers(builtin.Deps{})
	defs, diags := verbs.Parse("test.yaml", []byte(testVerbs))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, handlers.Specs())
	require.Empty(t, diags)
	reg := prometheus.NewRegistry()
	// The waits reach a person (human_process): without a policy that
	// auto-executes their tag they would wait at a gate first
	// (docs/reference/policy.md).
	pol, err := policy.Parse("test-policy.yaml", []byte("default:\n  auto_exec: [read_only, client_request]\n"), policy.KnownTags(cat.PolicyTags()))
	require.NoError(t, err)
	engine := runtime.New(store, handlers, runtime.Config{
		Catalogue: cat, PollInterval: 50 * time.Millisecond, Metrics: runtime.NewMetrics(reg),
		Policy: func() *policy.Policy { return pol },
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- engine.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	b := &testBundle{ctx: ctx, store: store, engine: engine, cat: cat}
	api := httpapi.New(httpapi.Config{
		Engine: engine, Tokens: append([]string{"old-token", testToken}, tenantTokens...), WebhookSecrets: [][]byte{[]byte(testSecret)},
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), Registerer: reg, MaxBody: testMaxBody,
		EventPoll: 20 * time.Millisecond, Ready: store.Ping,
	})
	b.srv = httptest.NewServer(api)
	t.Cleanup(b.srv.Close)
	b.client = &client.Client{BaseURL: b.srv.URL, Token: testToken, WebhookSecret: []byte(testSecret)}
	return b
}

// testMaxBody is the test daemon's --max-body.
const testMaxBody = 64 << 10

// raw sends a request as written and returns the status and body.
func (b *testBundle) raw(t *testing.T, method, path, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, method, b.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	waitToSendLargeBody(req, len(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(out)
}

// waitToSendLargeBody has a body over the daemon's --max-body wait for
// leave to be sent (Expect: 100-continue), as a careful client does. The
// daemon refuses it from its Content-Length with 413 and closes the
// connection without reading it (docs/reliability.md, "Under attack"): a
// client still writing the body may meet the reset before the answer.
func waitToSendLargeBody(req *http.Request, size int) {
	if size > testMaxBody {
		req.Header.Set("Expect", "100-continue")
	}
}

// waitFor polls a runbook until cond holds.
func (b *testBundle) waitFor(t *testing.T, id string, what string, cond func(*apitype.RunbookView) bool) *apitype.RunbookView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := b.client.Get(b.ctx, id)
		require.NoError(t, err)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("runbook %s never became %s; it is %s/%s", id, what, v.Status, v.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func statusIs(status rbtype.RunbookStatus) func(*apitype.RunbookView) bool {
	return func(v *apitype.RunbookView) bool { return v.Status == status }
}

func stateIs(state string) func(*apitype.RunbookView) bool {
	return func(v *apitype.RunbookView) bool { return string(v.State) == state }
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
