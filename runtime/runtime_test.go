package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testVerbs is the catalogue most runtime tests compile against.
const testVerbs = `
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: make-id
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: internal_db, params: {id_field: id}}
  output_schema:
    properties:
      id: {type: uuid}
- name: count
  domain: t
  execution: {kind: sync, handler: test.count, side_effects: external_call}
- name: flaky
  domain: t
  execution:
    kind: sync
    handler: test.flaky
    side_effects: external_call
    retry: {max_attempts: 3, backoff: exponential, base_delay: PT0.05S, max_delay: PT0.2S}
- name: wait
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H}
  output_schema:
    properties:
      answer: {type: string}
- name: wait-briefly
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT0.3S, on_timeout: fail}
- name: wait-escalate
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT0.3S, on_timeout: escalate}
- name: page
  domain: t
  execution: {kind: sync, handler: test.count, side_effects: external_call}
  input_schema:
    properties:
      who: {type: string}
      what: {type: string}
- name: wait-and-page
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts:
      park_timeout: PT0.3S
      on_timeout: escalate
      escalation: {verb: t.page, args: {who: oncall, what: "@args.case"}}
  input_schema:
    properties:
      case: {type: string}
- name: sleep
  domain: t
  execution:
    kind: durable
    handler: timer.sleep
    side_effects: none
    params: {duration: PT0.2S}
    timeouts: {park_timeout: PT1H}
- name: approve
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
- name: fail
  domain: t
  execution: {kind: sync, handler: core.fail, side_effects: none, params: {code: POLICY_DENIED, message: no}}
- name: undo
  domain: t
  execution: {kind: sync, handler: test.undo, side_effects: external_call}
- name: reserve
  domain: t
  execution:
    kind: sync
    handler: test.count
    side_effects: external_call
    compensation: {verb: t.undo, args: {what: "@args.what"}}
  input_schema:
    properties:
      what: {type: string}
- name: reserve-badly
  domain: t
  execution:
    kind: sync
    handler: test.count
    side_effects: external_call
    compensation: {verb: t.undo, args: {what: "@args.what", fail: true}}
  input_schema:
    properties:
      what: {type: string}
`

// recorder is a set of test handlers that count their calls.
type recorder struct {
	mu      sync.Mutex
	calls   map[string]int    // step key → calls
	keys    map[string]string // step key → idempotency key
	undone  []string
	flakies atomic.Int32
}

func newRecorder() *recorder {
	return &recorder{calls: map[string]int{}, keys: map[string]string{}}
}

func (r *recorder) count(_ context.Context, c *handler.Call) (handler.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[c.RunbookID.String()+"/"+c.StepKey]++
	r.keys[c.RunbookID.String()+"/"+c.StepKey] = c.IdempotencyKey
	return handler.Complete(map[string]any{"n": r.calls[c.RunbookID.String()+"/"+c.StepKey]}), nil
}

func (r *recorder) undo(_ context.Context, c *handler.Call) (handler.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	what, _ := c.Args["what"].(string)
	if fail, _ := c.Args["fail"].(bool); fail {
		return handler.Result{}, handler.Errorf(rbtype.CodeAuthForbidden, "cannot undo %s", what)
	}
	r.undone = append(r.undone, what)
	return handler.Complete(map[string]any{"undone": what}), nil
}

func (r *recorder) callsOf(id uuid.UUID, step string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id.String()+"/"+step]
}

type testBundle struct {
	opts     []option
	ctx      context.Context
	store    *durable.Store
	engine   *runtime.Engine
	cat      *registry.Catalogue
	handlers *runtime.Handlers
	rec      *recorder
}

type option func(*runtime.Config)

func setup(t *testing.T, opts ...option) *testBundle {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b := &testBundle{ctx: ctx, store: pgtest.Store(t), rec: newRecorder()}
	b.handlers = runtime.NewHandlers(builtin.Deps{})
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.count", Kind: rbtype.KindSync}, handler.HandlerFunc(b.rec.count)))
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.undo", Kind: rbtype.KindSync}, handler.HandlerFunc(b.rec.undo)))
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.flaky", Kind: rbtype.KindSync}, handler.HandlerFunc(
		func(context.Context, *handler.Call) (handler.Result, error) {
			b.rec.flakies.Add(1)
			return handler.Result{}, handler.Errorf(rbtype.CodeTemporaryProviderError, "try later")
		})))
	defs, diags := verbs.Parse("test.yaml", []byte(runtime.TagUnattended(testVerbs)))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, b.handlers.Specs())
	require.Empty(t, diags)
	b.cat = cat
	b.opts = opts
	b.newEngine()
	return b
}

// run starts the engine's worker until the test ends.
func (b *testBundle) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- b.engine.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func (b *testBundle) submit(t *testing.T, source string, inputs map[string]any) uuid.UUID {
	t.Helper()
	sub, err := b.engine.SubmitSource(b.ctx, "test.rbk", []byte(source), runtime.Submission{Inputs: inputs, Actor: "test"})
	require.NoError(t, err)
	require.True(t, sub.Created)
	return sub.ID
}

// waitFor polls the runbook until cond holds, failing after 20 seconds.
func (b *testBundle) waitFor(t *testing.T, id uuid.UUID, what string, cond func(*apitype.RunbookView) bool) *apitype.RunbookView {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := b.engine.Get(b.ctx, id)
		require.NoError(t, err)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			js, _ := json.MarshalIndent(v, "", "  ")
			t.Fatalf("runbook never became %s:\n%s", what, js)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *testBundle) waitStatus(t *testing.T, id uuid.UUID, status rbtype.RunbookStatus) *apitype.RunbookView {
	t.Helper()
	return b.waitFor(t, id, string(status), func(v *apitype.RunbookView) bool { return v.Status == status })
}

func (b *testBundle) waitState(t *testing.T, id uuid.UUID, state string) *apitype.RunbookView {
	t.Helper()
	return b.waitFor(t, id, state, func(v *apitype.RunbookView) bool { return string(v.State) == state })
}

func (b *testBundle) eventTypes(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = string(e.Type)
		if e.StepKey != "" {
			out[i] += " " + e.StepKey
		}
	}
	return out
}

func step(v *apitype.RunbookView, key string) apitype.StepView {
	for _, s := range v.Steps {
		if s.Key == key {
			return s
		}
	}
	panic(fmt.Sprintf("no step %q", key))
}

func TestChainRunsToCompletion(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `
(t.make-id :name $who :as @a)
(t.echo :id @a.id :as @b)
(t.count :from @b.id :as @c)`, map[string]any{"who": "ada"})
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, rbtype.RunbookState(rbtype.RunbookComplete), v.State)
	require.Empty(t, v.BlockedOn)
	var a map[string]any
	require.NoError(t, json.Unmarshal(v.Outcomes["a"], &a))
	require.Equal(t, "ada", a["name"])
	var bres map[string]any
	require.NoError(t, json.Unmarshal(v.Outcomes["b"], &bres))
	require.Equal(t, a["id"], bres["id"], "the reference carried @a.id into @b")
	require.Equal(t, 1, b.rec.callsOf(id, "c"))
	// A step that starts in the transaction that readied it has no
	// STEP_READY of its own: STEP_STARTED says it.
	require.Equal(t, []string{
		"RUNBOOK_SUBMITTED",
		"STEP_STARTED a", "STEP_SUCCEEDED a",
		"STEP_STARTED b", "STEP_SUCCEEDED b",
		"STEP_STARTED c", "STEP_SUCCEEDED c",
		"RUNBOOK_COMPLETED",
	}, b.eventTypes(t, id))
}

var _ = compiler.SchemaVersion

func specDurable(name string) registry.HandlerSpec {
	return registry.HandlerSpec{Name: name, Kind: rbtype.KindDurable}
}

// extendCatalogue adds verb definitions to the test catalogue; call it
// before run.
func (b *testBundle) extendCatalogue(t *testing.T, more string) {
	t.Helper()
	defs, diags := verbs.Parse("test.yaml", []byte(runtime.TagUnattended(testVerbs+more)))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, b.handlers.Specs())
	require.Empty(t, diags)
	b.cat = cat
	b.newEngine()
}

// unattended is the bundle's policy unless a test gives its own.
var unattended = runtime.UnattendedPolicy("")

// newEngine makes the bundle's engine from its catalogue and options.
func (b *testBundle) newEngine() {
	cfg := runtime.Config{
		Catalogue: b.cat, PollInterval: 20 * time.Millisecond, SweepInterval: 100 * time.Millisecond,
		LeaseTTL: 2 * time.Second, CallbackURL: "http://127.0.0.1:1/v1/notifications",
		// The fixture's verbs that reach outside run unattended unless a
		// test's own policy says otherwise (unattended_test.go).
		Policy: func() *policy.Policy { return unattended },
	}
	for _, o := range b.opts {
		o(&cfg)
	}
	b.engine = runtime.New(b.store, b.handlers, cfg)
}

func verbsRetry() verbs.Retry {
	return verbs.Retry{MaxAttempts: 5, Backoff: rbtype.BackoffExponential, BaseDelay: verbs.MustDuration("PT1S"), MaxDelay: verbs.MustDuration("PT10S")}
}

func mustID(v any) uuid.UUID {
	switch v := v.(type) {
	case uuid.UUID:
		return v
	case string:
		return uuid.MustParse(v)
	}
	panic("not an id")
}

// useCatalogue replaces the bundle's catalogue with verb files, each with
// its text rewritten by rewrite (a test server's address for a host's).
func (b *testBundle) useCatalogue(t *testing.T, files []string, rewrite func(string) string) {
	t.Helper()
	var defs []*verbs.Definition
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		d, diags := verbs.Parse(f, []byte(rewrite(string(src))))
		require.Empty(t, diags)
		defs = append(defs, d...)
	}
	cat, diags := registry.New(defs, b.handlers.Specs())
	require.Empty(t, diags)
	b.cat = cat
	b.newEngine()
}
