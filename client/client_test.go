package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// flaky answers 503 (with the Retry-After given, if any) until it has
// been asked fails times, then 200; it keeps what each attempt sent.
type flaky struct {
	fails      int
	retryAfter string
	mu         sync.Mutex
	bodies     []string
	keys       []string
	at         []time.Time
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	f.keys = append(f.keys, r.Header.Get(client.IdempotencyKeyHeader))
	f.at = append(f.at, time.Now())
	n := len(f.bodies)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if n <= f.fails {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error": {"code": "UNAVAILABLE", "message": "the database is unavailable or busy; retry"}}`))
		return
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id": "5c1e5b6e-8a3f-4f3a-9d55-4f0c2b1d9e01", "status": "executing", "created": true}`))
}

func (f *flaky) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// A 503 is sent again, the same body and Idempotency-Key, after the wait
// Retry-After asks for.
func TestRetryHonoursRetryAfter(t *testing.T) {
	f := &flaky{fails: 1, retryAfter: "1"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL}
	sub, err := c.Submit(context.Background(), apitype.SubmitRequest{Source: "(t.echo)", IdempotencyKey: "k-1"})
	require.NoError(t, err)
	require.True(t, sub.Created)
	require.Equal(t, 2, f.attempts())
	require.Equal(t, f.bodies[0], f.bodies[1], "the retry sends the same body")
	require.Equal(t, []string{"k-1", "k-1"}, f.keys, "and the same key")
	require.GreaterOrEqual(t, f.at[1].Sub(f.at[0]), time.Second, "after the second Retry-After asked for")
}

// Without Retry-After the client backs off; it stops after MaxAttempts
// and returns the last 503 as an *Error.
func TestRetryGivesUpAfterMaxAttempts(t *testing.T) {
	f := &flaky{fails: 10}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL, RetryPolicy: &client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}}
	_, err := c.Submit(context.Background(), apitype.SubmitRequest{Source: "(t.echo)"})
	require.ErrorIs(t, err, client.CodeUnavailable)
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	require.Equal(t, 3, f.attempts())

	// NoRetry sends once.
	f = &flaky{fails: 10}
	srv2 := httptest.NewServer(f)
	defer srv2.Close()
	_, err = (&client.Client{BaseURL: srv2.URL, RetryPolicy: &client.NoRetry}).Submit(context.Background(), apitype.SubmitRequest{Source: "(t.echo)"})
	require.ErrorIs(t, err, client.CodeUnavailable)
	require.Equal(t, 1, f.attempts())
}

// A Retry-After longer than the policy waits is not waited for: the 503
// comes back at once, saying how long the daemon asked.
func TestRetryAfterBeyondMaxDelayReturnsAtOnce(t *testing.T) {
	f := &flaky{fails: 10, retryAfter: "120"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL}
	_, err := c.Submit(context.Background(), apitype.SubmitRequest{Source: "(t.echo)"})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 2*time.Minute, apiErr.RetryAfter)
	require.Equal(t, 1, f.attempts())
}

// A context that ends while the client waits to retry ends the call.
func TestRetryWaitEndsWithTheContext(t *testing.T) {
	f := &flaky{fails: 10, retryAfter: "5"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := (&client.Client{BaseURL: srv.URL}).Submit(ctx, apitype.SubmitRequest{Source: "(t.echo)"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, f.attempts())
}

// An answer that is not the API's JSON still becomes an *Error, with the
// status's text as its code.
func TestErrorFromAProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := (&client.Client{BaseURL: srv.URL}).Get(context.Background(), "x")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadGateway, apiErr.StatusCode)
	require.Equal(t, apitype.ErrorCode("Bad Gateway"), apiErr.Code)
	require.Contains(t, apiErr.Message, "bad gateway")
}

// The daemon's refusals are *Errors that errors.Is tells apart.
func TestErrorsAgainstTheDaemon(t *testing.T) {
	ctx := context.Background()
	c := client.FromEnv()
	_, err := c.Get(ctx, "5c1e5b6e-8a3f-4f3a-9d55-4f0c2b1d9e01")
	require.ErrorIs(t, err, client.CodeNotFound)
	require.NotErrorIs(t, err, client.CodeConflict)
	_, err = c.Get(ctx, "not-a-uuid")
	require.ErrorIs(t, err, client.CodeInvalidRequest)
	_, err = (&client.Client{BaseURL: c.BaseURL, Token: "wrong"}).Whoami(ctx)
	require.ErrorIs(t, err, client.CodeUnauthorized)
	_, err = c.Verbs(ctx, "kyc.recrod")
	require.ErrorIs(t, err, client.CodeNotFound)
	require.ErrorContains(t, err, `did you mean "kyc.record"?`)
}

// strictly decodes raw into a value of out's type, refusing a field the
// type lacks: the client's types must hold everything the daemon sends.
func strictly(t *testing.T, raw []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(out), "%T lacks a field of %s", out, raw)
}

// Every answer of the daemon decodes into the client's types with no
// field left over, and back to the same JSON: the types and the API are
// in step.
func TestTypesHoldEveryField(t *testing.T) {
	ctx := context.Background()
	c := client.FromEnv()
	secret := []byte(testSecret)
	c.WebhookSecret = secret
	budget := 100.0
	sub, err := c.Submit(ctx, apitype.SubmitRequest{Source: "(kyc.request-documents :client \"Acme\" :as @docs)\n(kyc.sign-off :after @docs :as @sign)\n",
		IdempotencyKey: client.NewIdempotencyKey(), Budget: &rbtype.Budget{CostUSD: &budget}})
	require.NoError(t, err)
	view, err := c.Wait(ctx, sub.ID.String())
	require.NoError(t, err)
	_, err = c.Notify(ctx, apitype.NotificationRequest{CorrelationKey: view.BlockedOn[0].CorrelationKey, Status: rbtype.OutcomeCompleted,
		Result: []byte(`{"documents": []}`), Usage: &apitype.Usage{TokensIn: 10, CostUSD: 0.5, Model: "m"}})
	require.NoError(t, err)
	view, err = c.WaitUntil(ctx, sub.ID.String(), func(r *apitype.RunbookView) bool { return r.State == rbtype.StateAwaitingApproval })
	require.NoError(t, err)

	_, err = c.CreateSchedule(ctx, apitype.ScheduleRequest{Name: "types " + client.NewIdempotencyKey(), Cron: "@daily",
		Timezone: "Europe/London", Source: "(kyc.sign-off :as @sign)\n"})
	require.NoError(t, err)

	id := sub.ID.String()
	for path, out := range map[string]any{
		"/v1/runbooks/" + id:                     &apitype.RunbookView{},
		"/v1/runbooks?limit=5":                   &apitype.ListResponse{},
		"/v1/runbooks/" + id + "/events":         &apitype.EventsResponse{},
		"/v1/costs?group_by=verb":                &apitype.CostsResponse{},
		"/v1/whoami":                             &apitype.WhoamiResponse{},
		"/v1/verbs":                              &apitype.VerbsResponse{},
		"/v1/schedules":                          &apitype.ScheduleList{},
		"/v1/budgets":                            &apitype.TenantBudgetsView{},
		"/healthz":                               &apitype.Health{},
		"/v1/runbooks/" + id + "/events?limit=1": &apitype.EventsResponse{},
	} {
		resp, err := c.Do(ctx, http.MethodGet, path, nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, resp.Body)
		strictly(t, resp.Body, out)
		again, err := json.Marshal(out)
		require.NoError(t, err)
		require.JSONEq(t, string(resp.Body), string(again), "%s does not survive the client's types", path)
	}
	// Every field of the view is filled somewhere in this runbook's life,
	// so a renamed one would show as empty here rather than pass.
	require.NotZero(t, view.Cost.CostUSD)
	require.NotEmpty(t, view.NextActions)
	require.NotEmpty(t, view.PolicyHash)
	require.Equal(t, budget, *view.Budget.CostUSD)
	require.Len(t, view.Cost.Budgets, 1, "the runbook's own budget")
	require.Equal(t, 99.5, *view.Cost.Budgets[0].Left.CostUSD)

	resp, err := c.Do(ctx, http.MethodGet, "/v1/runbooks/"+id+"/nope", nil, nil)
	require.NoError(t, err)
	var body struct {
		Error *client.Error `json:"error"`
	}
	strictly(t, resp.Body, &body)
	require.Equal(t, client.CodeNotFound, body.Error.Code)
}

// Follow reads the live stream until the runbook finishes.
func TestFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.FromEnv()
	sub, err := c.Submit(ctx, apitype.SubmitRequest{Source: "(kyc.sign-off :as @sign)\n", IdempotencyKey: client.NewIdempotencyKey()})
	require.NoError(t, err)
	var seen []rbtype.EventType
	type followed struct {
		status rbtype.RunbookStatus
		err    error
	}
	done := make(chan followed, 1)
	go func() {
		status, err := c.Follow(ctx, sub.ID.String(), 0, func(ev apitype.Event) error {
			seen = append(seen, ev.Type)
			return nil
		})
		done <- followed{status, err}
	}()
	_, err = c.Wait(ctx, sub.ID.String())
	require.NoError(t, err)
	_, err = c.Approve(ctx, sub.ID.String(), "sign", apitype.DecisionRequest{By: "alice"})
	require.NoError(t, err)
	end := <-done
	require.NoError(t, end.err)
	require.Equal(t, rbtype.RunbookComplete, end.status)
	require.Contains(t, seen, rbtype.EventRunbookSubmitted)
	require.Contains(t, seen, rbtype.EventGateApproved)
}

// The package is the public client: it may import, of this module, only
// rbtype (docs/reference, ARCHITECTURE's table), so a program that uses
// it links none of the daemon.
func TestImportsOnlyRbtype(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/runbookdev/runbook/client").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/runbookdev/runbook/") {
			require.Contains(t, []string{"github.com/runbookdev/runbook/client", "github.com/runbookdev/runbook/rbtype"}, dep)
		}
	}
}

// Every error code the API answers with is one of the client's.
func TestErrorCodesAreTheAPIs(t *testing.T) {
	raw, err := client.FromEnv().OpenAPI(context.Background())
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorBody struct {
					Properties struct {
						Error struct {
							Properties struct {
								Code struct {
									Enum []string `json:"enum"`
								} `json:"code"`
							} `json:"properties"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"ErrorBody"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	codes := []apitype.ErrorCode{client.CodeMalformedJSON, client.CodeInvalidRequest, client.CodeUnauthorized, client.CodeForbidden, client.CodePolicyDenied,
		client.CodeNotFound, client.CodeMethodNotAllowed, client.CodeRequestTimeout, client.CodeConflict, client.CodeBodyTooLarge,
		client.CodeCompileFailed, client.CodeInvalidPlan, client.CodeSchemaMismatch, client.CodeUnavailable, client.CodeNotReady, client.CodeInternal, client.CodeLimitExceeded}
	var got []string
	for _, c := range codes {
		got = append(got, string(c))
	}
	require.ElementsMatch(t, doc.Components.Schemas.ErrorBody.Properties.Error.Properties.Code.Enum, got)
}
