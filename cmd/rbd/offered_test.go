package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// exampleServices fakes the services the example runbooks call, as the
// daemon's HTTP proxy: a route is "METHOD host/path"; fail makes a route
// answer an error until it is cleared.
type exampleServices struct {
	mu     sync.Mutex
	routes map[string]string // route -> JSON answer
	fail   map[string]int    // route -> status to answer instead
}

func newExampleServices(t *testing.T) (*exampleServices, string) {
	s := &exampleServices{routes: map[string]string{
		"GET iam.internal/v1/grants/stale":              `{"count": 2, "stale": [{"user": "ada", "role": "admin"}, {"user": "bo", "role": "oncall"}]}`,
		"POST iam.internal/v1/grants/revoke":            `{"revoked": "ok"}`,
		"POST tickets.internal/v1/tickets":              `{"ticket": "T-1"}`,
		"GET db-api.internal:8070/v1/replication/lag":   `{"seconds": 1}`,
		"POST db-api.internal:8070/v1/writes/pause":     `{"fence": "f-1"}`,
		"POST db-api.internal:8070/v1/writes/resume":    `{"resumed": true}`,
		"POST db-api.internal:8070/v1/promote":          `{"primary": "r2"}`,
		"POST chat.internal/v1/messages":                `{"ok": true}`,
		"POST models.internal:8080/v1/summarize":        `{"text": "a database company", "company": "Acme"}`,
		"POST models.internal:8080/v1/align":            `{"score": 0.8, "rationale": "fits"}`,
		"POST models.internal:8080/v1/draft":            `{"draft_id": "d-1", "body": "Hello"}`,
		"POST review.internal:8081/v1/tasks":            `{"id": "task-1"}`,
		"POST mail.internal:8025/v1/send":               `{"message_id": "m-1"}`,
		"POST probe.internal:8070/v1/dns":               `{"status": "ok"}`,
		"POST probe.internal:8070/v1/http":              `{"status": "ok"}`,
		"POST metrics.internal:9090/v1/summary":         `{"summary": "fine"}`,
		"POST logs.internal:9200/v1/excerpt":            `{"excerpt": "none"}`,
		"POST models.internal:8080/v1/incident-summary": `{"text": "all fine"}`,
		"POST pager.internal:8060/v1/pages":             `{"id": "page-1"}`,
		"POST chat.internal:8090/v1/post":               `{"ok": true}`,
	}, fail: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Method + " " + r.URL.Host + r.URL.Path
		s.mu.Lock()
		body, ok := s.routes[route]
		status := s.fail[route]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !ok:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error": "no route ` + route + `"}`))
		case status != 0:
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error": "failing on purpose"}`))
		default:
			_, _ = w.Write([]byte(body))
		}
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *exampleServices) failing(route string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.fail, route)
	} else {
		s.fail[route] = status
	}
}

// exampleSource is an example runbook's source.
func exampleSource(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../examples/runbooks", name, name+".rbk"))
	require.NoError(t, err)
	return string(b)
}

// notifyResults are results that fit the output_schema of the examples'
// waiting verbs, for the notify and resolve actions ("--result '{...}'"
// is the person's to fill in).
var notifyResults = map[string]string{
	"kyc.request-documents": `{"documents": [{"type": "passport", "url": "s3://kyc/p.pdf"}]}`,
	"outreach.review":       `{"subject": "Hello", "body": "Hello Ada"}`,
	"oncall.page":           `{"acknowledged_by": "ada"}`,
}

// takeAction takes one next action exactly as offered: its kind, its step
// and its Args, through the API, as the console and MCP do.
func takeAction(ctx context.Context, cl *client.Client, v *apitype.RunbookView, a apitype.ActionView) error {
	id := a.Args.RunbookID.String()
	verbOf := func() string {
		for _, s := range v.Steps {
			if s.Key == a.Step {
				return s.Verb
			}
		}
		return ""
	}
	var err error
	switch a.Kind {
	case apitype.ActionApprove:
		_, err = cl.Approve(ctx, id, a.Step, apitype.DecisionRequest{By: "walker"})
	case apitype.ActionNotify:
		_, err = cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: a.Args.CorrelationKey, Status: rbtype.OutcomeCompleted,
			Result: json.RawMessage(notifyResults[verbOf()])})
	case apitype.ActionResolve:
		_, err = cl.Resolve(ctx, id, a.Step, apitype.ResolveRequest{Action: "complete", Result: json.RawMessage(notifyResults[verbOf()]), By: "walker"})
	case apitype.ActionRetry:
		_, err = cl.Retry(ctx, id, apitype.RetryRequest{Steps: []string{a.Step}, Execute: a.Args.Execute, By: "walker"})
	case apitype.ActionClose:
		_, err = cl.Close(ctx, id, apitype.CloseRequest{By: "walker"})
	default:
		err = fmt.Errorf("unknown action kind %q", a.Kind)
	}
	return err
}

// offeredState makes a fresh runbook in one of the examples' states and
// returns its view there.
type offeredState func(t *testing.T, n int) *apitype.RunbookView

// takeEachOffered takes every next action of a state exactly as offered,
// each on a runbook of its own brought to that state (taking one may
// change what the others meet): none may be refused 409 (SEMANTICS §15,
// "Offered means accepted"), and each text says what it does.
func takeEachOffered(t *testing.T, ctx context.Context, cl *client.Client, name string, state offeredState, wantKinds ...string) int {
	t.Helper()
	v := state(t, 0)
	var kinds []string
	for _, a := range v.NextActions {
		kinds = append(kinds, a.Kind)
	}
	require.ElementsMatch(t, wantKinds, kinds, "%s: offered %v", name, v.NextActions)
	for i, a := range v.NextActions {
		if i > 0 {
			v = state(t, i)
			a = v.NextActions[i]
		}
		require.NotEmpty(t, a.Command, "%s: %s names its command", name, a.Kind)
		require.NotEmpty(t, a.Does, "%s: %s says what it does", name, a.Kind)
		require.Contains(t, a.Command, "rbd "+a.Kind, "%s: the command of %s", name, a.Kind)
		err := takeAction(ctx, cl, v, a)
		var ce *client.Error
		if errors.As(err, &ce) {
			require.NotEqual(t, http.StatusConflict, ce.StatusCode, "%s: offered %q (%s) was refused: %v", name, a.Command, a.Message, err)
		}
		require.NoError(t, err, "%s: offered %q was refused", name, a.Command)
	}
	return len(v.NextActions)
}

// TestOfferedMeansAccepted walks the example runbooks' failure and
// waiting states against a real daemon and takes every next action each
// offers, as offered.
func TestOfferedMeansAccepted(t *testing.T) {
	t.Parallel()
	services, proxy := newExampleServices(t)
	e := newDaemonEnv(t)
	e.env = append(e.env, "HTTP_PROXY="+proxy)
	crud, drop, err := pgtest.NewDatabase(`CREATE SCHEMA crm;
		CREATE TABLE crm.deals (deal_id serial PRIMARY KEY, company text UNIQUE NOT NULL, stage text, score double precision)`)
	require.NoError(t, err)
	t.Cleanup(func() { _ = drop() })
	e.env = append(e.env, "RBD_CRUD_DATABASE_URL="+crud)
	// kyc-onboarding's wait gives up after 9 days; here after 1 second,
	// so that it escalates while the test watches.
	kycVerbs, err := os.ReadFile("../../examples/runbooks/kyc-onboarding/verbs/kyc.yaml")
	require.NoError(t, err)
	e.file(t, "kyc/kyc.yaml", strings.Replace(string(kycVerbs), "park_timeout: P9D", "park_timeout: PT1S", 1))
	screening, err := os.ReadFile("../../examples/runbooks/kyc-onboarding/verbs/screening.yaml")
	require.NoError(t, err)
	e.file(t, "kyc/screening.yaml", string(screening))
	ex := func(name string) string { return "../../examples/runbooks/" + name + "/verbs" }
	d := e.start(t, "--verbs", filepath.Join(e.dir, "kyc"), "--verbs", ex("access-review"), "--verbs", ex("db-failover"),
		"--verbs", ex("funding-outreach"), "--verbs", ex("agent-outreach"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := d.client("")
	var seq atomic.Int64
	submit := func(t *testing.T, name string, mode rbtype.Mode, inputs map[string]any) string {
		t.Helper()
		sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: exampleSource(t, name), Inputs: inputs, Mode: mode,
			Name: fmt.Sprintf("%s-%d", name, seq.Load())})
		require.NoError(t, err)
		return sub.ID.String()
	}
	until := func(t *testing.T, id string, what string, cond func(*apitype.RunbookView) bool) *apitype.RunbookView {
		t.Helper()
		var v *apitype.RunbookView
		defer func() {
			if t.Failed() && v != nil {
				b, _ := json.MarshalIndent(v, "", "  ")
				t.Logf("%s never came; the runbook:\n%s", what, b)
			}
		}()
		waitUntil(t, what, func() (bool, error) {
			var err error
			v, err = cl.Get(ctx, id)
			return err == nil && cond(v), err
		})
		return v
	}
	kycInputs := func(n int) map[string]any {
		return map[string]any{"client_name": fmt.Sprintf("Acme %d-%d", n, seq.Add(1)), "contact_email": "c@acme.example"}
	}
	total := 0

	// kyc-onboarding, parked for the client's documents: notify.
	total += takeEachOffered(t, ctx, cl, "kyc parked", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "kyc-onboarding", "", kycInputs(n))
		return until(t, id, "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })
	}, apitype.ActionNotify)

	// kyc-onboarding, its wait escalated (no documents in time): resolve
	// and retry.
	escalated := func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "kyc-onboarding", "", kycInputs(n))
		return until(t, id, "escalated", func(v *apitype.RunbookView) bool {
			return len(v.NextActions) >= 2 && v.Status != rbtype.RunbookExecuting
		})
	}
	total += takeEachOffered(t, ctx, cl, "kyc escalated", escalated, apitype.ActionResolve, apitype.ActionRetry)

	// kyc-onboarding, the client said no (a failed notification): retry.
	total += takeEachOffered(t, ctx, cl, "kyc documents refused", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "kyc-onboarding", "", kycInputs(n))
		v := until(t, id, "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })
		_, err := cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: v.NextActions[0].Args.CorrelationKey, Status: rbtype.OutcomeFailed,
			Error: &apitype.ErrorView{Code: "DOCUMENTS_REFUSED", Message: "the client refused"}})
		require.NoError(t, err)
		return until(t, id, "finished", func(v *apitype.RunbookView) bool { return v.FinishedAt != nil })
	}, apitype.ActionRetry)

	// kyc-onboarding at its approval gate: approve.
	total += takeEachOffered(t, ctx, cl, "kyc gate", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "kyc-onboarding", "", kycInputs(n))
		v := until(t, id, "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })
		require.NoError(t, takeAction(ctx, cl, v, v.NextActions[0]))
		return until(t, id, "at the gate", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	}, apitype.ActionApprove)

	// access-review: a gate per stale grant; one rejected, the runbook is
	// partial: retry the rejected one.
	total += takeEachOffered(t, ctx, cl, "access-review gates", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "access-review", "", map[string]any{"system": fmt.Sprintf("billing-%d", seq.Add(1))})
		return until(t, id, "gates", func(v *apitype.RunbookView) bool { return len(v.NextActions) == 2 })
	}, apitype.ActionApprove, apitype.ActionApprove)
	total += takeEachOffered(t, ctx, cl, "access-review rejected", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "access-review", "", map[string]any{"system": fmt.Sprintf("billing-%d", seq.Add(1))})
		until(t, id, "gates", func(v *apitype.RunbookView) bool { return len(v.NextActions) == 2 })
		_, err := cl.Approve(ctx, id, "revoked[0]", apitype.DecisionRequest{By: "lead"})
		require.NoError(t, err)
		_, err = cl.Reject(ctx, id, "revoked[1]", apitype.DecisionRequest{By: "lead"})
		require.NoError(t, err)
		return until(t, id, "partial", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookPartial && v.FinishedAt != nil })
	}, apitype.ActionRetry)

	// db-failover: the lag cannot be read, the failure hook posts the
	// alarm, the runbook fails: retry the read.
	services.failing("GET db-api.internal:8070/v1/replication/lag", http.StatusBadRequest)
	total += takeEachOffered(t, ctx, cl, "db-failover failed", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "db-failover", "", map[string]any{"cluster": fmt.Sprintf("main-%d", seq.Add(1)), "replica": "r2"})
		return until(t, id, "failed", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookFailed && v.FinishedAt != nil })
	}, apitype.ActionRetry)
	services.failing("GET db-api.internal:8070/v1/replication/lag", 0)
	// The promotion fails after writes were paused: the pause is undone
	// (compensated), so a retry would be refused, and is not offered.
	services.failing("POST db-api.internal:8070/v1/promote", http.StatusBadRequest)
	takeEachOffered(t, ctx, cl, "db-failover compensated", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "db-failover", "", map[string]any{"cluster": fmt.Sprintf("main-%d", seq.Add(1)), "replica": "r2"})
		v := until(t, id, "at the gate", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
		require.NoError(t, takeAction(ctx, cl, v, v.NextActions[0]))
		return until(t, id, "failed", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookFailed && v.FinishedAt != nil })
	})
	services.failing("POST db-api.internal:8070/v1/promote", 0)

	// funding-outreach: the review waits on a person (notify); the send
	// fails after the CRM was changed, the change is undone: nothing
	// offered may be refused (a retry would be: it is not offered).
	total += takeEachOffered(t, ctx, cl, "funding review", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "funding-outreach", "", map[string]any{"founder_name": fmt.Sprintf("Ada %d", seq.Add(1)), "founder_email": "ada@x.example",
			"deck_url": "https://x.example/deck", "fund_thesis": "infra"})
		return until(t, id, "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })
	}, apitype.ActionNotify)
	services.failing("POST mail.internal:8025/v1/send", http.StatusBadRequest)
	takeEachOffered(t, ctx, cl, "funding send failed", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "funding-outreach", "", map[string]any{"founder_name": fmt.Sprintf("Ada %d", seq.Add(1)), "founder_email": "ada@x.example",
			"deck_url": "https://x.example/deck", "fund_thesis": "infra"})
		for {
			v := until(t, id, "waiting or finished", func(v *apitype.RunbookView) bool { return len(v.NextActions) > 0 || v.FinishedAt != nil })
			if v.FinishedAt != nil {
				return v
			}
			require.NoError(t, takeAction(ctx, cl, v, v.NextActions[0]))
			until(t, id, "moved on", func(w *apitype.RunbookView) bool {
				return len(w.NextActions) == 0 || w.NextActions[0] != v.NextActions[0] || w.FinishedAt != nil
			})
		}
	})
	services.failing("POST mail.internal:8025/v1/send", 0)

	// agent-outreach as a draft: run it for real.
	total += takeEachOffered(t, ctx, cl, "agent-outreach draft", func(t *testing.T, n int) *apitype.RunbookView {
		id := submit(t, "agent-outreach", rbtype.ModeDraftOnly, map[string]any{"company": fmt.Sprintf("Acme %d", seq.Add(1)), "subject": "hi", "body": "hello"})
		return until(t, id, "drafted", func(v *apitype.RunbookView) bool { return v.FinishedAt != nil })
	}, apitype.ActionRetry)
	t.Logf("took %d offered actions, none refused", total)
}

// TestBudgetAdviceNamesACommandThatWorks: a step a spent budget stopped
// says, in its error, how to go on; each command it names is run as
// written (AMOUNT filled in) and accepted, and the runbook, or its new
// generation, then completes. Without compensations that is a retry;
// when the failure undid completed steps, a retry would be refused, and
// the advice is a new generation.
func TestBudgetAdviceNamesACommandThatWorks(t *testing.T) {
	t.Parallel()
	bill := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(builtin.UsageHeader, `{"cost_usd": 4}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"billed": true}`))
	}))
	t.Cleanup(bill.Close)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", `
- name: bill
  domain: t
  policy_tags: [billing]
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "`+bill.URL+`"}
- name: charge
  domain: t
  policy_tags: [billing]
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "`+bill.URL+`"}
    compensation: {verb: t.refund}
- name: refund
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
`)
	d := e.start(t, "--verbs", verbs,
		"--policy", e.file(t, "policy.yaml", "default: {auto_exec: [read_only, billing], budget: {runbook: {cost_usd: 8}}}\n"),
		"--api-token-file", e.file(t, "tokens", "tok-ops tenant=default actor=ops roles=admin\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ops := d.client("tok-ops")
	rbd := func(args ...string) (string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--server", d.server, "--token", "tok-ops")
		code := run(args, &out, &errOut)
		return out.String() + errOut.String(), code
	}
	advised := regexp.MustCompile(`\((rbd [^)]+)\)`)
	for i, tc := range []struct {
		name, source, then string
	}{
		{"retry", "(t.bill :n 1 :as @a)\n(t.bill :n 2 :after @a :as @b)\n(t.bill :n 3 :after @b :as @c)\n", "rbd retry"},
		{"compensated", "(t.charge :n 1 :as @a)\n(t.charge :n 2 :after @a :as @b)\n(t.bill :n 3 :after @b :as @c)\n", "rbd regenerate"},
	} {
		eight := 8.0 // what the last case's advice raised, back down
		_, err := ops.SetBudget(ctx, "default", rbtype.BudgetRunbook, rbtype.Budget{CostUSD: &eight})
		require.NoError(t, err)
		sub, err := ops.Submit(ctx, apitype.SubmitRequest{Source: tc.source})
		require.NoError(t, err)
		id := sub.ID.String()
		v, err := ops.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rbtype.RunbookFailed, v.Status, tc.name)
		c, _ := v.Step("c")
		require.Equal(t, rbtype.CodeBudgetExceeded, c.Error.Code, tc.name)
		commands := advised.FindAllStringSubmatch(c.Error.Message, -1)
		require.Len(t, commands, 2, "%s: %s", tc.name, c.Error.Message)
		require.Equal(t, "rbd budget set --tenant default --runbook AMOUNT", commands[0][1], tc.name)
		require.True(t, strings.HasPrefix(commands[1][1], tc.then+" "+id), "%s: %s", tc.name, c.Error.Message)
		if tc.name == "compensated" {
			// What the advice avoids: the retry is refused.
			out, code := rbd("retry", id, "--step", "c")
			require.Equal(t, exitFailed, code, out)
			require.Contains(t, out, "CONFLICT")
			require.Contains(t, out, "rbd regenerate "+id, "the refusal names what works instead")
		}
		next := id
		for _, cmd := range commands {
			args := strings.Fields(strings.ReplaceAll(cmd[1], "AMOUNT", fmt.Sprint(12+4*i)))
			require.Equal(t, "rbd", args[0])
			args = slices.Clone(args[1:])
			for j, a := range args {
				args[j] = strings.Trim(a, "'")
			}
			out, code := rbd(args...)
			require.Equal(t, exitOK, code, "%s: %q was refused: %s", tc.name, cmd[1], out)
			if args[0] == "regenerate" {
				next = strings.Fields(out)[0]
			}
		}
		v, err = ops.Wait(ctx, next)
		require.NoError(t, err)
		require.Equal(t, rbtype.RunbookComplete, v.Status, "%s: after the advice, %s", tc.name, next)
	}
}
