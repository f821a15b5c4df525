package main

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// Without the OTEL_* variables that ask for export, no SDK is started;
// a protocol rbd does not build in stops it with a message.
func TestTracingIsOffUnlessAskedFor(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	log := slog.New(slog.DiscardHandler)
	tp, stop, err := startTracing(t.Context(), env(nil), log)
	require.NoError(t, err)
	require.Nil(t, tp)
	require.NoError(t, stop(t.Context()))

	tp, _, err = startTracing(t.Context(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}), log)
	require.NoError(t, err)
	require.Nil(t, tp)

	_, _, err = startTracing(t.Context(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}), log)
	require.ErrorContains(t, err, "OTLP over HTTP only")

	require.Equal(t, "https://collector:4318/v1/traces", redactEndpoint("https://user:pw@collector:4318/v1/traces?k=secret"))
}

// otlpReceiver is an OTLP/HTTP trace receiver: the spans rbd exports.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.URL.Path != "/v1/traces" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		var export coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &export); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.services = append(r.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) received() ([]*tracepb.Span, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([]string(nil), r.services...)
}

// The real daemon, pointed at an OTLP/HTTP receiver by the standard
// variables: it exports the runbook's span and its attempt's, in the
// submitter's trace, flushes them at a graceful stop, and its log line
// about the failed step names the trace, the span and the attempt.
func TestRbdExportsSpansWithOTLP(t *testing.T) {
	t.Parallel()
	receiver := newOTLPReceiver(t)
	e := newDaemonEnv(t)
	// A long batch delay: only the flush at the stop sends them.
	e.env = append(e.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+receiver.URL, "OTEL_SERVICE_NAME=rbd-under-test", "OTEL_BSP_SCHEDULE_DELAY=600000")
	verbs := e.file(t, "verbs/t.yaml", `
- name: refuse
  domain: t
  execution: {kind: sync, handler: core.fail, side_effects: none, params: {code: POLICY_DENIED, message: no}}
`)
	d := e.start(t, "--verbs", verbs)
	require.Contains(t, d.logs.String(), "tracing: exporting spans with OTLP over HTTP")

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	status, body := send(t, "POST", d.server+"/v1/runbooks", `{"source": "(t.refuse :as @r)"}`,
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01", "X-Correlation-Id", "order-7")
	require.Equal(t, http.StatusCreated, status, body)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(body), &sub))
	var v struct {
		Status rbtype.RunbookStatus `json:"status"`
		Steps  []struct {
			SpanID    string `json:"span_id"`
			AttemptID string `json:"attempt_id"`
		} `json:"steps"`
	}
	waitUntil(t, "the runbook to fail", func() (bool, error) {
		_, body := send(t, "GET", d.server+"/v1/runbooks/"+sub.ID.String(), "")
		return json.Unmarshal([]byte(body), &v) == nil && v.Status == rbtype.RunbookFailed, nil
	})
	spans, _ := receiver.received()
	require.Empty(t, spans, "queued until the batch is due, or the stop")

	require.Equal(t, 0, d.stop(syscall.SIGTERM))
	spans, services := receiver.received()
	require.Len(t, spans, 2, "the runbook's span and its attempt's")
	require.Equal(t, []string{"rbd-under-test"}, services)
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		require.Equal(t, traceID, hex.EncodeToString(s.TraceId), "every span is in the submitter's trace")
		byName[s.Name] = s
	}
	require.Equal(t, "00f067aa0ba902b7", hex.EncodeToString(byName["runbook"].ParentSpanId))
	require.Equal(t, byName["runbook"].SpanId, byName["t.refuse"].ParentSpanId)
	require.Equal(t, v.Steps[0].SpanID, hex.EncodeToString(byName["t.refuse"].SpanId))
	require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, byName["t.refuse"].GetStatus().GetCode())

	var line map[string]any
	for _, l := range strings.Split(d.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"call failed"`) {
			require.NoError(t, json.Unmarshal([]byte(l), &line))
		}
	}
	require.NotNil(t, line, "the failed call was logged:\n%s", d.logs.String())
	require.Equal(t, traceID, line["trace_id"])
	require.Equal(t, v.Steps[0].SpanID, line["span_id"])
	require.Equal(t, v.Steps[0].AttemptID, line["attempt_id"])

}

// A client command passes on the trace its environment carries
// (TRACEPARENT, TRACESTATE) and the correlation id it was given.
func TestClientCommandsPassTheTraceOn(t *testing.T) {
	env := map[string]string{"TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "TRACESTATE": "v=1"}
	h := traceHeader(func(k string) string { return env[k] }, "order-9")
	require.Equal(t, env["TRACEPARENT"], h.Get("traceparent"))
	require.Equal(t, "v=1", h.Get("tracestate"))
	require.Equal(t, "order-9", h.Get("X-Correlation-Id"))
	require.Empty(t, traceHeader(func(string) string { return "" }, ""))
}
