package builtin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// call runs a built-in handler directly.
func callBuiltin(t *testing.T, deps builtin.Deps, name string, c *handler.Call) (handler.Result, error) {
	t.Helper()
	h := builtin.Handlers(deps)[name]
	require.NotNil(t, h, name)
	if c.IdempotencyKey == "" {
		c.IdempotencyKey = "rbk-test-key"
	}
	return h.Call(context.Background(), c)
}

func TestHTTPCallSendsTheIdempotencyKeyAndMapsStatuses(t *testing.T) {
	t.Parallel()
	var got struct {
		key, auth, body, method string
	}
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.key, got.auth, got.body, got.method = r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"), string(b), r.Method
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok": true, "n": 7}`))
	}))
	defer srv.Close()
	deps := builtin.Deps{LookupEnv: func(k string) (string, bool) {
		if k == "TOKEN" {
			return "s3cret", true
		}
		return "", false
	}}
	params := map[string]any{"url": srv.URL + "/x", "headers": map[string]any{"Authorization": "Bearer ${env:TOKEN}"}}
	res, err := callBuiltin(t, deps, "http.call", &handler.Call{Args: map[string]any{"a": "b"}, Params: params, IdempotencyKey: "rbk-abc"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"ok": true, "n": json.Number("7")}, res.Value())
	require.Equal(t, "rbk-abc", got.key)
	require.Equal(t, "Bearer s3cret", got.auth, "secrets come from the environment at call time")
	require.JSONEq(t, `{"a":"b"}`, got.body)
	require.Equal(t, http.MethodPost, got.method)

	// docs/design/semantics.md section 12's mapping.
	for code, want := range map[int]rbtype.ErrorCode{
		429: rbtype.CodeRateLimit, 408: rbtype.CodeNetworkTimeout, 504: rbtype.CodeNetworkTimeout,
		502: rbtype.CodeTemporaryProviderError, 503: rbtype.CodeTemporaryProviderError, 500: rbtype.CodeTemporaryProviderError,
		401: rbtype.CodeAuthForbidden, 403: rbtype.CodeAuthForbidden,
		400: rbtype.CodeInvalidInput, 422: rbtype.CodeInvalidInput, 404: rbtype.CodeInvalidInput,
	} {
		status = code
		_, err := callBuiltin(t, deps, "http.call", &handler.Call{Params: params})
		var e *handler.Error
		require.ErrorAs(t, err, &e, "status %d", code)
		require.Equal(t, want, e.Code, "status %d", code)
		require.Equal(t, code == 429 || code == 408 || code >= 500, e.Retryable(), "status %d", code)
		require.NotContains(t, e.Message, "s3cret")
	}

	_, err = callBuiltin(t, builtin.Deps{LookupEnv: func(string) (string, bool) { return "", false }}, "http.call", &handler.Call{Params: params})
	var e *handler.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, rbtype.CodeDependencyUnavailable, e.Code)
	require.Contains(t, e.Message, "TOKEN")

	_, err = callBuiltin(t, deps, "http.call", &handler.Call{Params: map[string]any{"url": "http://127.0.0.1:1/nothing"}})
	require.ErrorAs(t, err, &e)
	require.Equal(t, rbtype.CodeDependencyUnavailable, e.Code)
	require.True(t, e.Retryable())
}

func TestHTTPCallTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	h := builtin.Handlers(builtin.Deps{})["http.call"]
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := h.Call(ctx, &handler.Call{Params: map[string]any{"url": srv.URL, "method": "GET"}, IdempotencyKey: "k"})
	var e *handler.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, rbtype.CodeNetworkTimeout, e.Code)
}

func TestHTTPStartPostsTheCorrelationKeyAndParks(t *testing.T) {
	t.Parallel()
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		_, _ = w.Write([]byte(`{"id": "task-9"}`))
	}))
	defer srv.Close()
	res, err := callBuiltin(t, builtin.Deps{}, "http.start", &handler.Call{
		Params: map[string]any{"url": srv.URL}, Args: map[string]any{"doc": "passport"},
		CorrelationKey: "ck-1", CallbackURL: "http://rbd/v1/notifications",
	})
	require.NoError(t, err)
	require.True(t, res.IsParked())
	require.Equal(t, map[string]any{
		"correlation_key": "ck-1", "callback_url": "http://rbd/v1/notifications", "args": map[string]any{"doc": "passport"},
	}, body)
}

func TestCoreHandlers(t *testing.T) {
	t.Parallel()
	res, err := callBuiltin(t, builtin.Deps{}, "core.echo", &handler.Call{
		Args: map[string]any{"a": 1}, Params: map[string]any{"result": map[string]any{"b": 2}, "id_field": "id"},
		IdempotencyKey: "rbk-same",
	})
	require.NoError(t, err)
	v := res.Value().(map[string]any)
	require.Equal(t, 1, v["a"])
	require.Equal(t, 2, v["b"])
	again, _ := callBuiltin(t, builtin.Deps{}, "core.echo", &handler.Call{Params: map[string]any{"id_field": "id"}, IdempotencyKey: "rbk-same"})
	require.Equal(t, v["id"], again.Value().(map[string]any)["id"], "the same key gives the same id")
	_, err = uuid.Parse(v["id"].(string))
	require.NoError(t, err)

	_, err = callBuiltin(t, builtin.Deps{}, "core.fail", &handler.Call{Params: map[string]any{"code": "RATE_LIMIT", "message": "drill"}})
	var e *handler.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, &handler.Error{Code: "RATE_LIMIT", Message: "drill"}, e)

	res, err = callBuiltin(t, builtin.Deps{}, "timer.sleep", &handler.Call{Args: map[string]any{"until": "2030-01-02T03:04:05Z"}})
	require.NoError(t, err)
	require.True(t, res.IsParked())
	_, err = callBuiltin(t, builtin.Deps{}, "timer.sleep", &handler.Call{})
	require.ErrorAs(t, err, &e)
	require.Equal(t, rbtype.CodeInvalidInput, e.Code)
}

// A Retry-After is read as seconds or an HTTP date, on a retryable answer
// only; what is not either asks for nothing.
func TestHTTPCallReadsRetryAfter(t *testing.T) {
	t.Parallel()
	var status int
	var header string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if header != "" {
			w.Header().Set("Retry-After", header)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	date := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		status int
		header string
		after  time.Duration
		at     time.Time
	}{
		{429, "2", 2 * time.Second, time.Time{}},
		{503, "120", 2 * time.Minute, time.Time{}},
		{429, "31536000", 365 * 24 * time.Hour, time.Time{}}, // a year: the retry policy caps it
		{429, "-5", 0, time.Time{}},
		{429, "99999999999999999999", 0, time.Time{}}, // no number rbd can hold: nothing
		{429, date.Format(http.TimeFormat), 0, date},
		{429, "soon", 0, time.Time{}},
		{401, "30", 0, time.Time{}}, // a final answer's Retry-After means nothing
	} {
		status, header = tt.status, tt.header
		_, err := callBuiltin(t, builtin.Deps{}, "http.call", &handler.Call{Params: map[string]any{"url": srv.URL}})
		var e *handler.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, tt.after, e.RetryAfter, "%d %q", tt.status, tt.header)
		require.True(t, tt.at.Equal(e.RetryAt), "%d %q", tt.status, tt.header)
	}
}
