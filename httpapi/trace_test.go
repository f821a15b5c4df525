package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

const (
	testTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	testParentSpan  = "00f067aa0ba902b7"
	testTraceParent = "00-" + testTraceID + "-" + testParentSpan + "-01"
)

// docs/design/semantics.md section 2 at the door: a submission's traceparent and
// X-Correlation-Id are the runbook's, shown by the view and on every
// event (a step's event with its attempt's id and span); a malformed
// traceparent is a new trace, not an error; a bad X-Correlation-Id is
// 400 naming the header; a notification's traceparent is kept for the
// resume's link.
func TestSubmissionsCarryTraceContext(t *testing.T) {
	b := setup(t)
	src := `{"source": "(t.wait :as @w)"}`
	status, body := b.raw(t, "POST", "/v1/runbooks", src,
		"traceparent", testTraceParent, "tracestate", "vendor=x", "X-Correlation-Id", "order-42")
	require.Equal(t, http.StatusCreated, status, body)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(body), &sub))
	v := b.waitFor(t, sub.ID.String(), "parked", stateIs("parked"))
	require.Equal(t, testTraceID, v.TraceID)
	require.Equal(t, testParentSpan, v.ParentSpanID)
	require.Equal(t, "order-42", v.CorrelationID)
	require.Len(t, v.SpanID, 16)

	// The events, as JSON: every one names the trace and the
	// correlation; the step's name its attempt and its span.
	status, body = b.raw(t, "GET", "/v1/runbooks/"+sub.ID.String()+"/events", "")
	require.Equal(t, http.StatusOK, status, body)
	var page struct {
		Events []map[string]any `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.NotEmpty(t, page.Events)
	w := v.Steps[0]
	for _, e := range page.Events {
		require.Equal(t, testTraceID, e["trace_id"], e["type"])
		require.Equal(t, "order-42", e["correlation_id"], e["type"])
		if e["step"] == "w" {
			require.Equal(t, w.AttemptID.String(), e["attempt_id"], e["type"])
			require.Equal(t, w.SpanID, e["span_id"], e["type"])
		} else {
			require.NotContains(t, e, "span_id", e["type"])
			require.NotContains(t, e, "attempt_id", e["type"])
		}
	}

	// A notification's traceparent is kept with it; the resume links to it.
	const sender = "00-11223344556677889900aabbccddeeff-0102030405060708-01"
	note := fmt.Sprintf(`{"correlation_key": %q, "status": "completed", "result": {"answer": "yes"}}`, w.CorrelationKey)
	status, body = b.raw(t, "POST", "/v1/notifications", note,
		client.SignatureHeader, client.Sign([]byte(testSecret), []byte(note), time.Now()), "traceparent", sender)
	require.Equal(t, http.StatusAccepted, status, body)
	stored, err := b.store.Notification(b.ctx, w.CorrelationKey)
	require.NoError(t, err)
	require.Equal(t, sender, stored.TraceParent)
	b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))

	// A malformed traceparent: a trace of the runbook's own (its id), a
	// correlation by its id, and no error.
	for _, bad := range []string{"00-xyz", "00-" + strings.Repeat("0", 32) + "-" + testParentSpan + "-01", "ff-" + testTraceID + "-" + testParentSpan + "-01"} {
		status, body = b.raw(t, "POST", "/v1/runbooks", `{"source": "(t.echo :v \"`+bad+`\")"}`, "traceparent", bad)
		require.Equal(t, http.StatusCreated, status, body)
		require.NoError(t, json.Unmarshal([]byte(body), &sub))
		v, err = b.client.Get(b.ctx, sub.ID.String())
		require.NoError(t, err)
		require.Equal(t, strings.ReplaceAll(sub.ID.String(), "-", ""), v.TraceID, bad)
		require.Empty(t, v.ParentSpanID, bad)
		require.Equal(t, sub.ID.String(), v.CorrelationID, bad)
	}

	// A correlation id rbd cannot keep: 400, naming the header.
	for _, bad := range []string{strings.Repeat("x", 129), "a\tb", "caf\xe9"} {
		status, body = b.raw(t, "POST", "/v1/runbooks", `{"source": "(t.echo :v \"c\")"}`, "X-Correlation-Id", bad)
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, body, httpapi.CodeInvalidRequest)
		require.Contains(t, body, "X-Correlation-Id")
	}
}

// A regeneration begins its own trace and keeps its parent's correlation
// id, unless the request brings others.
func TestRegenerationsTraceOnTheirOwn(t *testing.T) {
	b := setup(t)
	status, body := b.raw(t, "POST", "/v1/runbooks", `{"source": "(t.echo :v \"r\")"}`, "traceparent", testTraceParent, "X-Correlation-Id", "case-7")
	require.Equal(t, http.StatusCreated, status, body)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(body), &sub))
	b.waitFor(t, sub.ID.String(), "complete", statusIs(rbtype.RunbookComplete))

	status, body = b.raw(t, "POST", "/v1/runbooks/"+sub.ID.String()+"/regenerate", "")
	require.Equal(t, http.StatusCreated, status, body)
	var regen apitype.RegenerateResponse
	require.NoError(t, json.Unmarshal([]byte(body), &regen))
	v, err := b.client.Get(b.ctx, regen.ID.String())
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%x", regen.ID[:]), v.TraceID, "its own trace")
	require.Equal(t, "case-7", v.CorrelationID, "its parent's correlation id")

	status, body = b.raw(t, "POST", "/v1/runbooks/"+sub.ID.String()+"/regenerate", `{"inputs": {}}`,
		"traceparent", testTraceParent, "X-Correlation-Id", "case-8", "Idempotency-Key", "again")
	require.Equal(t, http.StatusCreated, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &regen))
	v, err = b.client.Get(b.ctx, regen.ID.String())
	require.NoError(t, err)
	require.Equal(t, testTraceID, v.TraceID, "the caller's trace")
	require.Equal(t, "case-8", v.CorrelationID)

}
