package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/runtime"
)

// The policy, scope and budget rules of docs/design/semantics.md sections
// 10 and 11, each over HTTP against PostgreSQL.

// policyVerbs are the tests' verbs; p.bill's url is the test server's.
const policyVerbs = `
- name: send
  domain: p
  policy_tags: [external_send]
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: wipe
  domain: p
  policy_tags: [destructive]
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
- name: wait
  domain: p
  policy_tags: [client_request]
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H}
- name: digest
  domain: p
  execution: {kind: sync, handler: core.echo, side_effects: none, determinism: pure, cache: {policy: reuse}}
- name: wire
  domain: p
  risk: high
  execution: {kind: sync, handler: core.echo, side_effects: external_call, level: guarded}
- name: bill
  domain: p
  policy_tags: [billing]
  execution:
    kind: sync
    handler: http.call
    params: {url: "%s"}
    side_effects: external_call
`

// policyTokens are the tests' tokens: a bare (admin) one, one scoped to
// the KYC example's verbs, approvers of each risk, and another tenant's.
var policyTokens = []string{
	"tok-admin",
	"tok-kyc tenant=default actor=kyc-bot roles=submit,read verbs=kyc.*,screening.run",
	"tok-medium tenant=default actor=bob roles=read,approve max_risk=medium",
	"tok-alice tenant=default actor=alice roles=read,approve",
	"tok-bots tenant=bots actor=bot roles=submit,read,approve",
	"tok-reader tenant=default actor=reader roles=read,submit",
	"tok-carol tenant=default actor=carol roles=read,approve groups=compliance,dpo",
}

// policyBundle is an engine, a server and the policy in force, which a
// test replaces as SIGHUP would.
type policyBundle struct {
	ctx    context.Context
	pol    atomic.Pointer[policy.Policy]
	cat    *registry.Catalogue
	engine *runtime.Engine
	srv    *httptest.Server
	// billed counts the calls the p.bill test server received, by the
	// step's n.
	mu     sync.Mutex
	billed []string
}

func setupPolicy(t *testing.T, pol string) *policyBundle {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b := &policyBundle{ctx: ctx}
	bill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.billed = append(b.billed, r.Header.Get("Idempotency-Key"))
		b.mu.Unlock()
		w.Header().Set(builtin.UsageHeader, `{"cost_usd": 4, "model": "m-1"}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(bill.Close)
	dir := t.TempDir()
	writeFile(t, dir+"/p.yaml", fmt.Sprintf(policyVerbs, bill.URL))
	store := pgtest.Store(t)
	handlers := runtime.NewHandlers(builtin.Deps{})
	cat, _, diags, err := registry.Load([]string{dir, "../examples/runbooks/kyc-onboarding/verbs", "../examples/runbooks/funding-outreach/verbs"}, handlers.Specs())
	require.NoError(t, err)
	require.False(t, diags.HasErrors(), "%v", diags)
	b.cat = cat
	b.setPolicy(t, pol)
	b.engine = runtime.New(store, handlers, runtime.Config{Catalogue: cat, PollInterval: 50 * time.Millisecond, Policy: b.pol.Load})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.engine.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	b.srv = httptest.NewServer(httpapi.New(httpapi.Config{Engine: b.engine, Catalogue: cat, Tokens: policyTokens, EventPoll: 20 * time.Millisecond}))
	t.Cleanup(b.srv.Close)
	return b
}

// setPolicy puts a policy in force ("" for the built-in one), as a
// reload does. The fixture's routine tags (routineTags) are auto-executed
// in every block that lists auto_exec, and in the default block besides
// read_only when it lists none, so that its waits and bills run
// unattended as they did before the policy followed the effect
// (docs/reference/policy.md); the rest of the rules are the test's.
func (b *policyBundle) setPolicy(t *testing.T, src string) {
	t.Helper()
	doc := map[string]map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(src), &doc))
	if doc["default"] == nil {
		doc["default"] = map[string]any{}
	}
	if _, ok := doc["default"]["auto_exec"]; !ok {
		doc["default"]["auto_exec"] = []any{policy.TagReadOnly}
	}
	addRoutine := func(block map[string]any) {
		if list, ok := block["auto_exec"].([]any); ok {
			block["auto_exec"] = append(list, routineTags...)
		}
	}
	addRoutine(doc["default"])
	if tenants, ok := doc["tenants"]; ok {
		for _, v := range tenants {
			if block, ok := v.(map[string]any); ok {
				addRoutine(block)
			}
		}
	}
	raw, err := yaml.Marshal(doc)
	require.NoError(t, err)
	p, err := policy.Parse("policy.yaml", raw, policy.KnownTags(b.cat.PolicyTags()))
	require.NoError(t, err, "%s", raw)
	b.pol.Store(p)
}

// routineTags are the fixture's tags of steps that reach outside and that
// every policy of these tests lets run: the KYC example's request for
// documents, p.wait, and p.bill.
var routineTags = []any{"client_request", "billing"}

func (b *policyBundle) as(token string) *client.Client {
	return &client.Client{BaseURL: b.srv.URL, Token: token}
}

// wait polls a runbook as token until cond holds.
func (b *policyBundle) wait(t *testing.T, token, id, what string, cond func(*apitype.RunbookView) bool) *apitype.RunbookView {
	t.Helper()
	v, err := b.as(token).WaitUntil(b.ctx, id, func(v *apitype.RunbookView) bool { return cond(v) || v.FinishedAt != nil })
	require.NoError(t, err)
	require.True(t, cond(v), "runbook %s never became %s; it is %s/%s: %+v", id, what, v.Status, v.State, v.Failures)
	return v
}

func (b *policyBundle) calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.billed...)
}

// eventsOf returns a runbook's events of one type.
func (b *policyBundle) eventsOf(t *testing.T, token, id string, typ rbtype.EventType) []apitype.Event {
	t.Helper()
	evs, err := b.as(token).Events(b.ctx, id, 0)
	require.NoError(t, err)
	var out []apitype.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func submit(t *testing.T, c *client.Client, ctx context.Context, src string) *apitype.SubmitResponse {
	t.Helper()
	out, err := c.Submit(ctx, apitype.SubmitRequest{Source: src})
	require.NoError(t, err)
	return out
}

// TestExternalSendWaitsForAPersonUnlessAutoExec: under the built-in policy
// a step tagged external_send is gated at admission (POLICY_GATED names
// the rule) and waits for a person; only where the tenant's policy lists
// external_send in auto_exec does it run unattended.
func TestExternalSendWaitsForAPersonUnlessAutoExec(t *testing.T) {
	b := setupPolicy(t, "")
	sub := submit(t, b.as("tok-admin"), b.ctx, "(p.send :to \"x\" :as @s)\n")
	v := b.wait(t, "tok-admin", sub.ID.String(), "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	require.Equal(t, rbtype.GateHumanConfirm, v.Steps[0].Gate)
	require.NotEmpty(t, v.PolicyHash)
	gated := b.eventsOf(t, "tok-admin", sub.ID.String(), rbtype.EventPolicyGated)
	require.Len(t, gated, 1)
	require.Equal(t, "s", gated[0].Step)
	var data runtime.PolicyGatedData
	require.NoError(t, json.Unmarshal(gated[0].Data, &data))
	require.Equal(t, policy.RuleNeverAutoSend, data.Rule)
	require.Equal(t, "external_send", data.Tag)
	require.Equal(t, v.PolicyHash, data.PolicyHash)

	// A policy whose default gates nothing still never auto-sends; the
	// tenant bots lists external_send in auto_exec, and only its runbook
	// runs unattended.
	b.setPolicy(t, "default: {gate: []}\ntenants:\n  bots: {auto_exec: [external_send]}\n")
	other := submit(t, b.as("tok-admin"), b.ctx, "(p.send :to \"y\" :as @s)\n")
	b.wait(t, "tok-admin", other.ID.String(), "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	bots := submit(t, b.as("tok-bots"), b.ctx, "(p.send :to \"y\" :as @s)\n")
	v = b.wait(t, "tok-bots", bots.ID.String(), "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
	require.Equal(t, rbtype.GateNone, v.Steps[0].Gate)
	require.Empty(t, b.eventsOf(t, "tok-bots", bots.ID.String(), rbtype.EventPolicyGated))
}

// TestADeniedTagIsRefusedAndNothingIsStored: 403 POLICY_DENIED naming the
// step, the verb and the rule; no runbook is made.
func TestADeniedTagIsRefusedAndNothingIsStored(t *testing.T) {
	b := setupPolicy(t, "default: {deny: [destructive]}\n")
	_, err := b.as("tok-admin").Submit(b.ctx, apitype.SubmitRequest{Source: "(p.send :to \"x\")\n(p.wipe :all true :as @gone)\n"})
	requireAPIError(t, err, http.StatusForbidden, httpapi.CodePolicyDenied,
		`step "gone" (verb p.wipe): verb p.wipe is tagged destructive, which default.deny refuses`)
	list, err := b.as("tok-admin").List(b.ctx, client.ListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Runbooks, "nothing is stored")

	// A plan compiled elsewhere is judged the same.
	plan, diags := b.compile(t, "(p.wipe :all true)\n")
	require.False(t, diags)
	_, err = b.as("tok-admin").Submit(b.ctx, apitype.SubmitRequest{Plan: plan})
	requireAPIError(t, err, http.StatusForbidden, httpapi.CodePolicyDenied, `verb p.wipe`)
	// A risk above the tenant's ceiling, too.
	b.setPolicy(t, "default: {max_risk: medium}\n")
	_, err = b.as("tok-admin").Submit(b.ctx, apitype.SubmitRequest{Source: "(p.wire :amount 5 :as @w)\n"})
	requireAPIError(t, err, http.StatusForbidden, httpapi.CodePolicyDenied, `step "w" (verb p.wire): verb p.wire is risk high, above default.max_risk medium`)
}

// compile compiles a source with the bundle's catalogue, as rbc would, and
// reports whether it had errors.
func (b *policyBundle) compile(t *testing.T, src string) (json.RawMessage, bool) {
	t.Helper()
	plan, diags := compiler.CompileSource("plan.rbk", []byte(src), b.cat)
	if diags.HasErrors() {
		return nil, true
	}
	return plan.JSON(), false
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// readExample reads a file of examples/runbooks.
func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../examples/runbooks/" + name)
	require.NoError(t, err)
	return string(b)
}

// TestATokenScopedToKYC: a token whose scope is kyc.* and screening.run
// cannot submit outreach.send-email (403 naming the step and the verb),
// nothing is stored, and it can submit the KYC example.
func TestATokenScopedToKYC(t *testing.T) {
	b := setupPolicy(t, "")
	kyc := b.as("tok-kyc")
	_, err := kyc.Submit(b.ctx, apitype.SubmitRequest{Source: `(outreach.send-email :to "a@example.com" :subject "s" :body "b" :as @mail)` + "\n"})
	requireAPIError(t, err, http.StatusForbidden, httpapi.CodeForbidden,
		`step "mail" calls verb outreach.send-email, which this token's scope (verbs=kyc.*,screening.run) does not allow`)
	list, err := b.as("tok-admin").List(b.ctx, client.ListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Runbooks)

	src := readExample(t, "kyc-onboarding/kyc-onboarding.rbk")
	sub, err := kyc.Submit(b.ctx, apitype.SubmitRequest{Source: src, Filename: "kyc-onboarding.rbk",
		Inputs: map[string]any{"client_name": "Acme", "contact_email": "ops@acme.example"}})
	require.NoError(t, err)
	require.True(t, sub.Created)
	b.wait(t, "tok-kyc", sub.ID.String(), "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })

	// Its verbs listing is its scope.
	verbs, err := kyc.Verbs(b.ctx, "")
	require.NoError(t, err)
	for _, v := range verbs.Verbs {
		require.Regexp(t, `^(kyc\.|screening\.run$)`, v.Name)
	}
	require.Len(t, verbs.Verbs, 7)
	_, err = kyc.Verbs(b.ctx, "outreach.send-email")
	requireAPIError(t, err, http.StatusNotFound, httpapi.CodeNotFound, `no verb "outreach.send-email" this token may use`)
	me, err := kyc.Whoami(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"kyc.*", "screening.run"}, me.Verbs)
	require.Equal(t, rbtype.RiskHigh, me.MaxRisk)
}

// TestAMediumRiskApproverCannotDecideAHighRiskGate: a gate on a step of
// risk high takes approve and max_risk=high (or admin).
func TestAMediumRiskApproverCannotDecideAHighRiskGate(t *testing.T) {
	b := setupPolicy(t, "")
	sub := submit(t, b.as("tok-admin"), b.ctx, "(p.wire :amount 5 :as @w)\n")
	id := sub.ID.String()
	b.wait(t, "tok-admin", id, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	_, err := b.as("tok-medium").Approve(b.ctx, id, "w", apitype.DecisionRequest{})
	requireAPIError(t, err, http.StatusForbidden, httpapi.CodeForbidden,
		`step "w" calls verb p.wire of risk high; its gate is decided only by a token with max_risk=high (or admin), and this one's is medium`)
	_, err = b.as("tok-medium").Reject(b.ctx, id, "w", apitype.DecisionRequest{})
	requireAPIError(t, err, http.StatusForbidden, httpapi.CodeForbidden, "max_risk=high")
	v, err := b.as("tok-admin").Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.StepWaitingApproval, v.Steps[0].Status, "the refused decision changed nothing")
	// A medium-risk gate is the medium approver's to decide.
	low := submit(t, b.as("tok-admin"), b.ctx, "(p.send :to \"x\" :as @s)\n")
	b.wait(t, "tok-admin", low.ID.String(), "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	_, err = b.as("tok-medium").Approve(b.ctx, low.ID.String(), "s", apitype.DecisionRequest{})
	require.NoError(t, err)
	// alice's token names no ceiling: high.
	_, err = b.as("tok-alice").Approve(b.ctx, id, "w", apitype.DecisionRequest{})
	require.NoError(t, err)
	b.wait(t, "tok-admin", id, "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
}

// TestAPolicyChangeDoesNotAlterARunningRunbook: what admission decided is
// frozen on the runbook's steps; a later policy judges only what comes in
// after it.
func TestAPolicyChangeDoesNotAlterARunningRunbook(t *testing.T) {
	b := setupPolicy(t, "")
	src := "(p.wait :as @w)\n(p.send :to \"x\" :after @w :as @s)\n"
	gated := submit(t, b.as("tok-bots"), b.ctx, src)
	v := b.wait(t, "tok-bots", gated.ID.String(), "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })
	hash := v.PolicyHash

	b.setPolicy(t, "tenants:\n  bots: {auto_exec: [external_send]}\n")
	ungated := submit(t, b.as("tok-bots"), b.ctx, src+";; under the new policy\n")
	u := b.wait(t, "tok-bots", ungated.ID.String(), "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })
	require.NotEqual(t, hash, u.PolicyHash)

	// Back to the built-in policy: the runbook admitted under auto_exec
	// still sends unattended, the one admitted before still waits.
	b.setPolicy(t, "")
	for _, id := range []string{gated.ID.String(), ungated.ID.String()} {
		v, err := b.as("tok-bots").Get(b.ctx, id)
		require.NoError(t, err)
		_, err = b.as("tok-bots").Notify(b.ctx, apitype.NotificationRequest{CorrelationKey: v.Steps[0].CorrelationKey, Status: rbtype.OutcomeCompleted})
		require.NoError(t, err)
	}
	v = b.wait(t, "tok-bots", gated.ID.String(), "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	require.Equal(t, hash, v.PolicyHash)
	require.Equal(t, rbtype.GateHumanConfirm, v.Steps[1].Gate)
	u = b.wait(t, "tok-bots", ungated.ID.String(), "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
	require.Equal(t, rbtype.GateNone, u.Steps[1].Gate)
}

// TestTheCacheIsNotServedAcrossPolicies: an entry made under one policy
// hash is reused under it, and not under another.
func TestTheCacheIsNotServedAcrossPolicies(t *testing.T) {
	b := setupPolicy(t, "")
	run := func(key string) *apitype.RunbookView {
		t.Helper()
		sub, err := b.as("tok-admin").Submit(b.ctx, apitype.SubmitRequest{Source: "(p.digest :text \"abc\")\n", IdempotencyKey: key})
		require.NoError(t, err)
		return b.wait(t, "tok-admin", sub.ID.String(), "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
	}
	require.Zero(t, run("first").Cost.CacheHits)
	require.EqualValues(t, 1, run("second").Cost.CacheHits, "the same policy: reused")
	b.setPolicy(t, "default: {gate: [pii]}\n")
	third := run("third")
	require.Zero(t, third.Cost.CacheHits, "another policy: not reused")
	require.EqualValues(t, 1, run("fourth").Cost.CacheHits, "and under it, its own entry is")
}

// TestBudgetStopsTheThirdCall: three steps that each report cost_usd 4
// under a runbook budget of 8: two run (8 spent, at the budget), the third
// fails BUDGET_EXCEEDED and its call never reaches the server; once an
// admin raises the budget, a retry completes it.
func TestBudgetStopsTheThirdCall(t *testing.T) {
	b := setupPolicy(t, "default: {budget: {runbook: {cost_usd: 8}}}\n")
	admin := b.as("tok-admin")
	sub := submit(t, admin, b.ctx, "(p.bill :n 1 :as @a)\n(p.bill :n 2 :after @a :as @b)\n(p.bill :n 3 :after @b :as @c)\n")
	id := sub.ID.String()
	v := b.wait(t, "tok-admin", id, "failed", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookFailed })
	require.Len(t, b.calls(), 2, "the third call never reached the server")
	c, _ := v.Step("c")
	require.Equal(t, rbtype.StepFailed, c.Status)
	require.Equal(t, rbtype.CodeBudgetExceeded, c.Error.Code)
	require.Zero(t, c.Attempt)
	require.Equal(t, 8.0, v.Cost.CostUSD)
	require.Len(t, v.Cost.Budgets, 1)
	rb := v.Cost.Budgets[0]
	require.Equal(t, rbtype.BudgetRunbook, rb.Budget)
	require.True(t, rb.Exceeded)
	require.Equal(t, 8.0, rb.Spent.CostUSD)
	require.Equal(t, 0.0, *rb.Left.CostUSD)
	require.Equal(t, "default.budget.runbook", rb.Rule)
	var retry *apitype.ActionView
	for i := range v.NextActions {
		if v.NextActions[i].Kind == apitype.ActionRetry && v.NextActions[i].Step == "c" {
			retry = &v.NextActions[i]
		}
	}
	require.NotNil(t, retry)
	require.Equal(t, "the runbook budget is spent (cost_usd 8 of 8); raise it first: rbd budget set --tenant default --runbook AMOUNT", retry.Message)
	require.Equal(t, rbtype.BudgetRunbook, retry.Budget.Budget)
	exceeded := b.eventsOf(t, "tok-admin", id, rbtype.EventBudgetExceeded)
	require.Len(t, exceeded, 1)
	require.JSONEq(t, `{"budget":"runbook","measure":"cost_usd","limit":8,"spent":8,"rule":"default.budget.runbook"}`, string(exceeded[0].Data))

	// Raised by an admin, stored, and a retry runs the step.
	changed, err := admin.SetBudget(b.ctx, "default", rbtype.BudgetRunbook, rbtype.Budget{CostUSD: ptr(12.0)})
	require.NoError(t, err)
	require.Nil(t, changed.Before)
	require.Equal(t, "token-1", changed.By)
	_, err = admin.Retry(b.ctx, id, apitype.RetryRequest{})
	require.NoError(t, err)
	v = b.wait(t, "tok-admin", id, "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
	require.Len(t, b.calls(), 3)
	require.Equal(t, 12.0, v.Cost.CostUSD)
	require.Equal(t, "set by rbd budget set for tenant default", v.Cost.Budgets[0].Rule)
	require.True(t, v.Cost.Budgets[0].Exceeded, "12 of 12 spent")
}

// TestBudgetsAPI: setting a budget takes an admin and a number at or
// above zero; a submission's own budget may only lower the tenant's.
func TestBudgetsAPI(t *testing.T) {
	b := setupPolicy(t, "default: {budget: {runbook: {cost_usd: 20}, month: {credits: 100}}}\n")
	admin, reader := b.as("tok-admin"), b.as("tok-reader")
	_, err := reader.SetBudget(b.ctx, "default", rbtype.BudgetMonth, rbtype.Budget{CostUSD: ptr(10.0)})
	requireAPIError(t, err, http.StatusForbidden, httpapi.CodeForbidden, "admin")
	_, err = admin.SetBudget(b.ctx, "default", rbtype.BudgetMonth, rbtype.Budget{CostUSD: ptr(-1.0)})
	requireAPIError(t, err, http.StatusBadRequest, httpapi.CodeInvalidRequest, "cost_usd must be a number at or above zero")
	status, body := rawAs(t, b.srv.URL, "tok-admin", "PUT", "/v1/budgets/default/month", `{"cost_usd": "3000"}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, `field \"cost_usd\" must be a number`)
	status, _ = rawAs(t, b.srv.URL, "tok-admin", "PUT", "/v1/budgets/default/week", `{"cost_usd": 3}`)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = rawAs(t, b.srv.URL, "tok-admin", "PUT", "/v1/budgets/default/month", `{}`)
	require.Equal(t, http.StatusBadRequest, status, "a budget that names no measure")

	got, err := reader.Budgets(b.ctx, "")
	require.NoError(t, err)
	require.Equal(t, "default", got.Tenant)
	require.Len(t, got.Budgets, 2)
	require.Equal(t, rbtype.BudgetRunbook, got.Budgets[0].Budget)
	require.Nil(t, got.Budgets[0].Spent)
	require.Equal(t, 100.0, *got.Budgets[1].Left.Credits)

	_, err = admin.SetBudget(b.ctx, "default", rbtype.BudgetMonth, rbtype.Budget{CostUSD: ptr(3000.0)})
	require.NoError(t, err)
	changed, err := admin.SetBudget(b.ctx, "default", rbtype.BudgetMonth, rbtype.Budget{CostUSD: ptr(4000.0)})
	require.NoError(t, err)
	require.Equal(t, 3000.0, *changed.Before.CostUSD, "what it replaced")
	got, err = reader.Budgets(b.ctx, "")
	require.NoError(t, err)
	require.Equal(t, "set", got.Budgets[1].Rule)
	require.Equal(t, "token-1", got.Budgets[1].Set.UpdatedBy)
	cleared, err := admin.ClearBudget(b.ctx, "default", rbtype.BudgetMonth)
	require.NoError(t, err)
	require.Nil(t, cleared.After)
	got, err = reader.Budgets(b.ctx, "")
	require.NoError(t, err)
	require.Equal(t, "default.budget.month", got.Budgets[1].Rule)

	// A submission's own budget.
	_, err = reader.Submit(b.ctx, apitype.SubmitRequest{Source: "(p.digest :text \"a\")\n", Budget: &rbtype.Budget{CostUSD: ptr(25.0)}})
	requireAPIError(t, err, http.StatusBadRequest, httpapi.CodeInvalidRequest,
		"budget cost_usd 25 above 20: a submission may only lower the runbook budget of default.budget.runbook")
	_, err = reader.Submit(b.ctx, apitype.SubmitRequest{Source: "(p.digest :text \"a\")\n", Budget: &rbtype.Budget{Credits: ptr(-2.0)}})
	requireAPIError(t, err, http.StatusBadRequest, httpapi.CodeInvalidRequest, "budget.credits must be a number at or above zero")
	sub, err := reader.Submit(b.ctx, apitype.SubmitRequest{Source: "(p.digest :text \"a\")\n", Budget: &rbtype.Budget{CostUSD: ptr(5.0), Tokens: ptr(int64(100))}})
	require.NoError(t, err)
	v := b.wait(t, "tok-reader", sub.ID.String(), "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
	require.Equal(t, 5.0, *v.Budget.CostUSD)
	require.Equal(t, "the runbook's own budget, or default.budget.runbook", v.Cost.Budgets[0].Rule)
	require.Equal(t, 5.0, *v.Cost.Budgets[0].Limit.CostUSD)
	require.EqualValues(t, 100, *v.Cost.Budgets[0].Limit.Tokens)
}

// TestApproveWithAnEmptyBodyRecordsTheTokensActor: POST .../approve {}
// with a token whose line names its actor completes the gate and records
// that actor; a "by" naming someone else is kept as a note.
func TestApproveWithAnEmptyBodyRecordsTheTokensActor(t *testing.T) {
	b := setupPolicy(t, "")
	sub := submit(t, b.as("tok-admin"), b.ctx, "(p.send :to \"x\" :as @s)\n(p.send :to \"y\" :as @t)\n")
	id := sub.ID.String()
	b.wait(t, "tok-admin", id, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	status, body := rawAs(t, b.srv.URL, "tok-alice", "POST", "/v1/runbooks/"+id+"/steps/s/approve", `{}`)
	require.Equal(t, http.StatusOK, status, body)
	status, body = rawAs(t, b.srv.URL, "tok-alice", "POST", "/v1/runbooks/"+id+"/steps/t/approve", `{"by": "mallory"}`)
	require.Equal(t, http.StatusOK, status, body)
	v := b.wait(t, "tok-admin", id, "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
	require.Equal(t, "alice", v.Steps[0].GateDecision.By)
	require.Equal(t, "alice", v.Steps[1].GateDecision.By)
	approved := b.eventsOf(t, "tok-admin", id, rbtype.EventGateApproved)
	require.Len(t, approved, 2)
	require.JSONEq(t, `{"by":"alice","comment":""}`, string(approved[0].Data))
	require.JSONEq(t, `{"by":"alice","comment":"","note":"mallory"}`, string(approved[1].Data))
}

// rawAs sends a request with a token and returns the status and body.
func rawAs(t *testing.T, base, token, method, path, body string) (int, string) {
	t.Helper()
	var b testBundle
	b.ctx = context.Background()
	return b.rawTo(t, base, method, path, body, "Authorization", "Bearer "+token)
}

func ptr[T any](v T) *T { return &v }
