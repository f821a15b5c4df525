package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/rbtype"
)

// TestBudgetSetThenRetry runs a real daemon under a runbook budget of
// cost_usd 8 and three steps whose service reports cost_usd 4 each: two
// run, the third fails BUDGET_EXCEEDED without its call reaching the
// service, and rbd status says what to raise; rbd budget set raises it and
// rbd retry completes the runbook. The refusal is counted in
// rbd_budget_exceeded_total.
func TestBudgetSetThenRetry(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	bill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set(builtin.UsageHeader, `{"cost_usd": 4}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"billed": true}`))
	}))
	t.Cleanup(bill.Close)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", `
- name: bill
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "`+bill.URL+`"}
`)
	d := e.start(t, "--verbs", verbs,
		"--policy", e.file(t, "policy.yaml", "default: {budget: {runbook: {cost_usd: 8}}, auto_exec: [read_only, routine]}\n"),
		"--api-token-file", e.file(t, "tokens", "tok-ops tenant=default actor=ops roles=admin\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ops := d.client("tok-ops")
	sub, err := ops.Submit(ctx, apitype.SubmitRequest{Source: "(t.bill :n 1 :as @a)\n(t.bill :n 2 :after @a :as @b)\n(t.bill :n 3 :after @b :as @c)\n"})
	require.NoError(t, err)
	id := sub.ID.String()
	v, err := ops.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.EqualValues(t, 2, calls.Load(), "the third call never reached the service")
	c, _ := v.Step("c")
	require.Equal(t, rbtype.CodeBudgetExceeded, c.Error.Code)
	_, metrics := send(t, "GET", d.server+"/metrics", "")
	require.Contains(t, metrics, `rbd_budget_exceeded_total{budget="runbook"} 1`, "the refusal is counted")

	rbd := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--server", d.server, "--token", "tok-ops")
		require.Equal(t, exitOK, run(args, &out, &errOut), "rbd %v: %s", args, errOut.String())
		return out.String()
	}
	status := rbd("status", id)
	require.Regexp(t, `(?m)^next +rbd retry `+id+` --step c \(the runbook budget is spent \(cost_usd 8 of 8\); raise it first: rbd budget set --tenant default --runbook AMOUNT\)$`, status)
	require.Regexp(t, `(?m)^budget +runbook: cost_usd=0 left of cost_usd=8 \(default.budget.runbook\): spent$`, status)

	require.Equal(t, "tenant default: runbook budget cost_usd=12 (was the policy's)\n", rbd("budget", "set", "--tenant", "default", "--runbook", "12"))
	rbd("retry", id, "--step", "c")
	status = rbd("status", id, "--wait")
	require.Regexp(t, `(?m)^status +complete$`, status)
	require.Regexp(t, `(?m)^budget +runbook: cost_usd=0 left of cost_usd=12 \(set by rbd budget set for tenant default\): spent$`, status)
	require.EqualValues(t, 3, calls.Load())
}

// TestBudgetFiguresAreMoney: what is spent and left is printed as money
// (rbd status, rbd budget show), never with the float noise that summing
// and subtracting decimal fractions leaves (0.30000000000000004).
func TestBudgetFiguresAreMoney(t *testing.T) {
	t.Parallel()
	bill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(builtin.UsageHeader, `{"cost_usd": 0.29, "credits": 0.1}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"billed": true}`))
	}))
	t.Cleanup(bill.Close)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", `
- name: bill
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "`+bill.URL+`"}
`)
	d := e.start(t, "--verbs", verbs,
		"--policy", e.file(t, "policy.yaml", "default: {budget: {runbook: {cost_usd: 0.3, credits: 0.5}, day: {cost_usd: 1.1}}, auto_exec: [read_only, routine]}\n"),
		"--api-token-file", e.file(t, "tokens", "tok-ops tenant=default actor=ops roles=admin\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ops := d.client("tok-ops")
	sub, err := ops.Submit(ctx, apitype.SubmitRequest{Source: "(t.bill :n 1 :as @a)\n"})
	require.NoError(t, err)
	id := sub.ID.String()
	v, err := ops.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, v.Status)

	rbd := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--server", d.server, "--token", "tok-ops")
		require.Equal(t, exitOK, run(args, &out, &errOut), "rbd %v: %s", args, errOut.String())
		return out.String()
	}
	status := rbd("status", id)
	require.Regexp(t, `(?m)^budget +runbook: cost_usd=0.01,credits=0.4 left of cost_usd=0.3,credits=0.5 \(default.budget.runbook\)$`, status)
	require.Regexp(t, `(?m)^budget +day: cost_usd=0.81 left of cost_usd=1.1 \(default.budget.day\)$`, status)
	show := rbd("budget", "show")
	require.Regexp(t, `(?m)^day +cost_usd=1.1 +cost_usd=0.29,tokens=0,credits=0.1 +cost_usd=0.81 +default.budget.day$`, show)
	// The API's figures are money too: the console and other clients
	// show them as they come.
	v, err = ops.Get(ctx, id)
	require.NoError(t, err)
	left := v.Cost.Budgets[0].Left
	require.EqualValues(t, "runbook", v.Cost.Budgets[0].Budget)
	require.NotNil(t, left.CostUSD)
	require.Equal(t, 0.01, *left.CostUSD)
	require.NotRegexp(t, `\d\.\d{7,}`, status+show, "no float noise")
}
