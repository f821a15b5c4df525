package httpapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/httpapi"
)

// TestReadyzSaysOnlyNotReady: /readyz answers anyone, so while the
// database is down it says only that it is not ready; docs/reliability.md found it
// telling the database's user, name, host and port. The reason goes to
// the log, once, not at every probe.
func TestReadyzSaysOnlyNotReady(t *testing.T) {
	t.Parallel()
	var failing error = errors.New(`failed to connect to user=rbd database=payments: 10.1.2.3:5432 (db.internal): dial error: connection refused`)
	logs := &lockedBuffer{}
	api := httpapi.New(httpapi.Config{
		Ready:  func(context.Context) error { return failing },
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	probe := func() (int, string) {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code == http.StatusServiceUnavailable {
			require.Equal(t, "1", rec.Header().Get("Retry-After"))
		}
		return rec.Code, rec.Body.String()
	}
	for range 5 {
		status, body := probe()
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.JSONEq(t, `{"error": {"code": "NOT_READY", "message": "not ready"}}`, body)
	}
	require.Equal(t, 1, strings.Count(logs.String(), "db.internal"), "the reason is logged once:\n%s", logs.String())

	failing = nil
	status, body := probe()
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"status": "ready"}`, body)
	require.Contains(t, logs.String(), "ready again")
}
