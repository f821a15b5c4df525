package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

func TestNotificationWebhook(t *testing.T) {
	b := setup(t)
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @docs)\n(t.echo :v @docs.answer :as @after)\n"})
	require.NoError(t, err)
	v := b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
	require.Len(t, v.BlockedOn, 1)
	blocked := v.BlockedOn[0]
	require.Equal(t, "docs", blocked.Step)
	require.Equal(t, apitype.BlockedAwaitingNotification, blocked.Reason)
	key := blocked.CorrelationKey
	require.NotEmpty(t, key)

	body := `{"correlation_key": "` + key + `", "status": "completed", "result": {"answer": "uploaded"}}`
	post := func(body, signature string) (int, string) {
		t.Helper()
		if signature == "" {
			return b.raw(t, "POST", "/v1/notifications", body)
		}
		return b.raw(t, "POST", "/v1/notifications", body, client.SignatureHeader, signature)
	}
	now := time.Now()
	secret := []byte(testSecret)

	// Refused before anything is read: unsigned, forged, stale, or signed
	// for another body.
	refusals := []struct{ signature, why string }{
		{"", "has no Rbd-Signature header"},
		{client.Sign([]byte("guess"), []byte(body), now), "does not match the body"},
		{client.Sign(secret, []byte(body), now.Add(-6*time.Minute)), "outside the 5-minute window"},
		{client.Sign(secret, []byte(body), now.Add(6*time.Minute)), "outside the 5-minute window"},
		{client.Sign(secret, []byte(body+" "), now), "does not match the body"},
		{"v1=abc", "must be"},
	}
	for _, r := range refusals {
		status, out := post(body, r.signature)
		require.Equal(t, http.StatusUnauthorized, status, out)
		require.Contains(t, out, r.why)
	}
	v, err = b.client.Get(b.ctx, sub.ID.String())
	require.NoError(t, err)
	require.Equal(t, rbtype.StateParked, v.State, "a refused notification resumes nothing")

	// Malformed but signed: 400. Too large: 413, before the signature.
	bad := `{"correlation_key": "` + key + `", "status": "completed", "result": {"answer": }`
	status, out := post(bad, client.Sign(secret, []byte(bad), now))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Contains(t, out, "MALFORMED_JSON")
	status, out = post(`{"correlation_key": "`+key+`", "status": "done"}`, client.Sign(secret, []byte(`{"correlation_key": "`+key+`", "status": "done"}`), now))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Contains(t, out, `status must be \"completed\" or \"failed\"`)
	huge := `{"correlation_key": "` + strings.Repeat("k", 65<<10) + `", "status": "completed"}`
	status, out = post(huge, client.Sign(secret, []byte(huge), now))
	require.Equal(t, http.StatusRequestEntityTooLarge, status, out)
	// A signature header missing, malformed or stale is refused before
	// the body is read: its size is never looked at.
	status, out = post(huge, "")
	require.Equal(t, http.StatusUnauthorized, status, out)
	status, out = post(huge, client.Sign(secret, []byte(huge), now.Add(-time.Hour)))
	require.Equal(t, http.StatusUnauthorized, status, out)

	// Accepted once; the same again is a duplicate; another payload for
	// the same key is a conflict and the first stands.
	status, out = post(body, client.Sign(secret, []byte(body), now))
	require.Equal(t, http.StatusAccepted, status, out)
	require.JSONEq(t, `{"status":"accepted"}`, out)
	respaced := `{"status":"completed","result":{"answer":"uploaded"},"correlation_key":"` + key + `"}`
	status, out = post(respaced, client.Sign(secret, []byte(respaced), now))
	require.Equal(t, http.StatusOK, status, out)
	require.JSONEq(t, `{"status":"duplicate"}`, out)
	_, err = b.client.Notify(b.ctx, apitype.NotificationRequest{CorrelationKey: key, Status: "failed", Error: &apitype.ErrorView{Code: "POLICY_DENIED"}})
	requireAPIError(t, err, http.StatusConflict, httpapi.CodeConflict, "the first notification stands")

	v = b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	require.JSONEq(t, `{"v":"uploaded"}`, string(v.Outcomes["after"]))
}

func TestNotificationsUnsignedWhenNoSecret(t *testing.T) {
	b := setup(t)
	api := httpapi.New(httpapi.Config{Engine: b.engine})
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/notifications", strings.NewReader(`{"correlation_key": "early-1", "status": "completed"}`)))
	// Nobody waits for early-1 yet: it is kept for the step that will.
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
}

func TestNotificationFailureFailsTheStep(t *testing.T) {
	b := setup(t)
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @docs)\n"})
	require.NoError(t, err)
	v := b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
	res, err := b.client.Notify(b.ctx, apitype.NotificationRequest{
		CorrelationKey: v.BlockedOn[0].CorrelationKey, Status: "failed",
		Error: &apitype.ErrorView{Code: rbtype.CodePolicyDenied, Message: "client refused"},
	})
	require.NoError(t, err)
	require.Equal(t, "accepted", res.Status)
	v = b.waitFor(t, sub.ID.String(), "failed", statusIs(rbtype.RunbookFailed))
	require.Equal(t, []apitype.FailureView{{Step: "docs", Code: rbtype.CodePolicyDenied, Message: "client refused"}}, v.Failures)
	require.Empty(t, v.BlockedOn, "a finished runbook is blocked on nothing: its failures say what happened")
}

// TestFailedNotificationMustSayWhy: a failed notification without an
// error code was accepted and failed the step as INTERNAL with no
// message (docs/reliability.md); it is 400, and nothing is stored.
func TestFailedNotificationMustSayWhy(t *testing.T) {
	b := setup(t)
	for _, body := range []string{
		`{"correlation_key": "k-why", "status": "failed"}`,
		`{"correlation_key": "k-why", "status": "failed", "error": {"message": "it broke"}}`,
		`{"correlation_key": "k-why", "status": "failed", "error": {"code": "", "message": "it broke"}}`,
	} {
		status, out := b.raw(t, "POST", "/v1/notifications", body, client.SignatureHeader, client.Sign([]byte(testSecret), []byte(body), time.Now()))
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, out, `"code":"INVALID_REQUEST"`)
		require.Contains(t, out, "error.code")
	}
	// The key is still free: the refusals stored nothing.
	body := `{"correlation_key": "k-why", "status": "failed", "error": {"code": "POLICY_DENIED"}}`
	status, out := b.raw(t, "POST", "/v1/notifications", body, client.SignatureHeader, client.Sign([]byte(testSecret), []byte(body), time.Now()))
	require.Equal(t, http.StatusAccepted, status, out)
}

// A signed notification whose result does not fit the parked verb's
// output_schema is 422 SCHEMA_VALIDATION_FAILED, and stores nothing: the
// same bad body is 422 again, and the fixed one is accepted (docs/daemon.md).
func TestNotificationResultMustFitTheVerb(t *testing.T) {
	b := setup(t)
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @docs)\n"})
	require.NoError(t, err)
	v := b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
	key := v.BlockedOn[0].CorrelationKey
	send := func(body string) (int, string) {
		return b.raw(t, "POST", "/v1/notifications", body, client.SignatureHeader, client.Sign([]byte(testSecret), []byte(body), time.Now()))
	}
	bad := `{"correlation_key": "` + key + `", "status": "completed", "result": {"answer": ["yes"]}}`
	for range 2 {
		status, out := send(bad)
		require.Equal(t, http.StatusUnprocessableEntity, status, out)
		require.Contains(t, out, `"code":"SCHEMA_VALIDATION_FAILED"`)
		require.Contains(t, out, `t.wait's output_schema (step \"docs\" waits on this key)`)
	}
	status, out := send(`{"correlation_key": "` + key + `", "status": "completed", "result": {"answer": "yes"}}`)
	require.Equal(t, http.StatusAccepted, status, out)
	b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
}

// A notification's usage, over HTTP: impossible usage is 400 naming the
// field, with nothing stored; a possible one is accepted and counted in
// the resumed runbook's cost (docs/design/semantics.md section 3).
func TestNotificationUsageOverHTTP(t *testing.T) {
	b := setup(t)
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: "(t.wait :as @docs)\n"})
	require.NoError(t, err)
	v := b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
	key := v.BlockedOn[0].CorrelationKey
	send := func(usage string) (int, string) {
		body := `{"correlation_key": "` + key + `", "status": "completed", "result": {"documents": []}, "usage": ` + usage + `}`
		return b.raw(t, "POST", "/v1/notifications", body, client.SignatureHeader, client.Sign([]byte(testSecret), []byte(body), time.Now()))
	}
	status, out := send(`{"tokens_in": -5}`)
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Contains(t, out, `"code":"INVALID_REQUEST"`)
	require.Contains(t, out, "usage")
	status, out = send(`{"tokens_in": 700, "tokens_out": 70, "model": "ocr-2", "cost_usd": 0.07}`)
	require.Equal(t, http.StatusAccepted, status, out)
	v = b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))
	require.Equal(t, int64(700), v.Cost.TokensIn)
	require.InDelta(t, 0.07, v.Cost.CostUSD, 1e-9)
}
