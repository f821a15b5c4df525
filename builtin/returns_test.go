package builtin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/handler"
)

// TestHTTPCallResultShapes pins what http.call makes of a response body,
// as docs/reference/verbs.md ("What each handler returns") shows it: an
// object as it is, other JSON under "value", text under "body", nothing
// as {}.
func TestHTTPCallResultShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{200, `{"id": "c-7", "status": "open"}`, `{"id": "c-7", "status": "open"}`},
		{200, `[{"id": 1}, {"id": 2}]`, `{"value": [{"id": 1}, {"id": 2}]}`},
		{200, `"queued"`, `{"value": "queued"}`},
		{200, `42`, `{"value": 42}`},
		{200, `null`, `{"value": null}`},
		{200, `accepted`, `{"body": "accepted"}`},
		{http.StatusNoContent, ``, `{}`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		res, err := callBuiltin(t, builtin.Deps{}, "http.call", &handler.Call{Params: map[string]any{"url": srv.URL + "/v1/cases"}})
		srv.Close()
		require.NoError(t, err, tc.body)
		got, err := json.Marshal(res.Value())
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(got), "a body of %q", tc.body)
	}
}
