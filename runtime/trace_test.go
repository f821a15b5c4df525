package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/tracing"
)

// traced gives the engine an SDK provider that keeps its spans in memory,
// with the ids the engine asks for.
func traced(exp *tracetest.InMemoryExporter) option {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(tracing.IDGenerator{}))
	return func(c *runtime.Config) { c.TracerProvider = tp }
}

// headerLog records a header of the requests a test server receives, by
// path.
type headerLog struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (h *headerLog) handler(name string, answer string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen[r.URL.Path] = append(h.seen[r.URL.Path], r.Header.Get(name))
		h.mu.Unlock()
		fmt.Fprint(w, answer)
	})
}

func (h *headerLog) of(path string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen[path]...)
}

// httpVerbs are an http.call and an http.start against srv.
func httpVerbs(srv string) string {
	return fmt.Sprintf(`
- name: call
  domain: t
  execution: {kind: sync, handler: http.call, params: {url: "%[1]s/call", method: POST}, side_effects: none}
- name: start
  domain: t
  execution:
    kind: durable
    handler: http.start
    params: {url: "%[1]s/start", method: POST}
    side_effects: external_call
    timeouts: {park_timeout: PT1H}
`, srv)
}

// spanNamed waits for the exporter to hold a span of that name.
func spanNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				found = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no span %q was emitted", name)
	return found
}

// ledgerRow is a step_attempts row's trace columns.
type ledgerRow struct{ correlationID, traceID, spanID string }

func ledgerRows(t *testing.T, b *testBundle, id uuid.UUID) map[string]ledgerRow {
	t.Helper()
	conn, err := pgx.Connect(b.ctx, pgtest.DatabaseURL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(b.ctx, `SELECT step_key, attempt_id, coalesce(correlation_id, ''), coalesce(trace_id, ''), coalesce(span_id, '')
		FROM `+pgx.Identifier{b.store.Schema(), "step_attempts"}.Sanitize()+` WHERE runbook_id = $1`, id)
	require.NoError(t, err)
	out := map[string]ledgerRow{}
	for rows.Next() {
		var key string
		var attemptID uuid.UUID
		var r ledgerRow
		require.NoError(t, rows.Scan(&key, &attemptID, &r.correlationID, &r.traceID, &r.spanID))
		require.Equal(t, fmt.Sprintf("%x", attemptID[:8]), r.spanID, "an attempt's span id is the first 8 bytes of its attempt id")
		out[key] = r
	}
	require.NoError(t, rows.Err())
	return out
}

// docs/design/semantics.md section 2, the docs/design/semantics.md test: a runbook submitted in a trace,
// with an http.call and an http.start that parks until a notification
// sent from another trace. The exporter receives the runbook's span, a
// child of the submitter's, and one span per attempt, children of the
// runbook's, all in the submitter's trace; the services see the
// attempts' spans as traceparent; the park is an event on its attempt's
// span, and the notification's span a link; the ledger, the events and
// the view carry the same ids.
func TestASpanTreeForARunbookWithAParkedStep(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	b := setup(t, traced(exp))
	seen := &headerLog{seen: map[string][]string{}}
	mux := http.NewServeMux()
	mux.Handle("/call", seen.handler("traceparent", `{"ok": true}`))
	mux.Handle("/start", seen.handler("traceparent", `{"id": "ext-1"}`))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, httpVerbs(srv.URL))
	b.run(t)

	submitter := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	sub, err := b.engine.SubmitSource(b.ctx, "traced.rbk", []byte(`(t.call :as @c) (t.start :after @c :as @s)`),
		runtime.Submission{Parent: submitter, CorrelationID: "order-42"})
	require.NoError(t, err)
	id := sub.ID
	v := b.waitState(t, id, "parked")
	require.Equal(t, submitter.TraceID().String(), v.TraceID)
	require.Equal(t, submitter.SpanID().String(), v.ParentSpanID)
	require.Equal(t, "order-42", v.CorrelationID)

	sender := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01},
		SpanID:  trace.SpanID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: step(v, "s").CorrelationKey, Status: rbtype.OutcomeCompleted,
		Result: json.RawMessage(`{}`), Sender: sender})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
	v = b.waitStatus(t, id, rbtype.RunbookComplete)

	rbSpan := spanNamed(t, exp, "runbook")
	callSpan := spanNamed(t, exp, "t.call")
	startSpan := spanNamed(t, exp, "t.start")

	// The runbook's span: in the submitter's trace, its child.
	require.Equal(t, submitter.TraceID(), rbSpan.SpanContext.TraceID())
	require.Equal(t, submitter.SpanID(), rbSpan.Parent.SpanID())
	require.Equal(t, v.SpanID, rbSpan.SpanContext.SpanID().String())
	require.WithinDuration(t, v.CreatedAt, rbSpan.StartTime, time.Millisecond, "the runbook's span starts at its submission")

	// One span per attempt, children of the runbook's, with the ids the
	// view, the ledger and the services saw.
	ledger := ledgerRows(t, b, id)
	for _, c := range []struct {
		key  string
		span tracetest.SpanStub
		path string
	}{{"c", callSpan, "/call"}, {"s", startSpan, "/start"}} {
		sv := step(v, c.key)
		require.Equal(t, submitter.TraceID(), c.span.SpanContext.TraceID(), c.key)
		require.Equal(t, rbSpan.SpanContext.SpanID(), c.span.Parent.SpanID(), "%s's span is a child of the runbook's", c.key)
		require.Equal(t, sv.SpanID, c.span.SpanContext.SpanID().String(), c.key)
		require.Equal(t, []string{fmt.Sprintf("00-%s-%s-01", submitter.TraceID(), sv.SpanID)}, seen.of(c.path),
			"%s sent its attempt's span as traceparent", c.key)
		require.Equal(t, ledgerRow{correlationID: "order-42", traceID: submitter.TraceID().String(), spanID: sv.SpanID}, ledger[c.key])
		var hasAttemptID bool
		for _, a := range c.span.Attributes {
			if a.Key == "rbd.attempt.id" {
				hasAttemptID = a.Value.AsString() == sv.AttemptID.String()
			}
		}
		require.True(t, hasAttemptID, "%s's span names its attempt", c.key)
	}
	require.Len(t, exp.GetSpans(), 3, "one span for the runbook, one per attempt")

	// The park is an event on its attempt's span; the notification's
	// span, from another trace, is a link.
	var events []string
	for _, e := range startSpan.Events {
		events = append(events, e.Name)
	}
	require.Equal(t, []string{"parked", "resumed"}, events)
	require.Len(t, startSpan.Links, 1)
	require.Equal(t, sender.TraceID(), startSpan.Links[0].SpanContext.TraceID())
	require.Equal(t, sender.SpanID(), startSpan.Links[0].SpanContext.SpanID())
	require.Empty(t, callSpan.Links)

	// Every event carries the runbook's trace; a step's its attempt's.
	evs, tr, err := b.engine.TracedEvents(b.ctx, id, 0, 0)
	require.NoError(t, err)
	require.Equal(t, submitter.TraceID().String(), tr.TraceID)
	require.Equal(t, "order-42", tr.CorrelationID)
	for _, e := range evs {
		if e.StepKey == "s" && e.Type == rbtype.EventStepParked {
			attempt, span := tr.Attempt(e.StepKey, e.Attempt)
			require.Equal(t, *step(v, "s").AttemptID, attempt)
			require.Equal(t, step(v, "s").SpanID, span)
		}
	}
}

// Without a traceparent a runbook begins its own trace, whose id is the
// runbook's id, and without a correlation id it is correlated by its id:
// the view, the ledger and the spans agree.
func TestARunbookWithoutTraceContextBeginsItsOwn(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	b := setup(t, traced(exp))
	b.run(t)
	id := b.submit(t, `(t.echo :v "x" :as @e)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	own := fmt.Sprintf("%x", id[:])
	require.Equal(t, own, v.TraceID)
	require.Empty(t, v.ParentSpanID)
	require.Equal(t, id.String(), v.CorrelationID)
	require.Equal(t, ledgerRow{correlationID: id.String(), traceID: own, spanID: step(v, "e").SpanID}, ledgerRows(t, b, id)["e"])

	rbSpan := spanNamed(t, exp, "runbook")
	require.Equal(t, own, rbSpan.SpanContext.TraceID().String())
	require.False(t, rbSpan.Parent.IsValid(), "the root of its own trace")
	echo := spanNamed(t, exp, "t.echo")
	require.Equal(t, rbSpan.SpanContext.SpanID(), echo.Parent.SpanID())

	// A correlation id that is not printable, or too long, is refused.
	_, err := b.engine.SubmitSource(b.ctx, "x.rbk", []byte(`(t.echo :v "y")`), runtime.Submission{CorrelationID: "a\nb"})
	require.ErrorIs(t, err, rbtype.ErrInvalid)
	_, err = b.engine.SubmitSource(b.ctx, "x.rbk", []byte(`(t.echo :v "y")`),
		runtime.Submission{CorrelationID: string(make([]byte, machine.MaxCorrelationID+1))})
	require.ErrorIs(t, err, rbtype.ErrInvalid)
}

// Without a provider, no spans are made, but the ids are kept and sent:
// a service behind http.call still joins the trace.
func TestTraceparentIsSentWithTracingOff(t *testing.T) {
	b := setup(t)
	seen := &headerLog{seen: map[string][]string{}}
	srv := httptest.NewServer(seen.handler("traceparent", `{}`))
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, httpVerbs(srv.URL))
	b.run(t)
	id := b.submit(t, `(t.call :as @c)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, []string{fmt.Sprintf("00-%x-%s-01", id[:], step(v, "c").SpanID)}, seen.of("/call"))
}

// spansOf are the exported spans of a trace, by name.
func spansOf(exp *tracetest.InMemoryExporter, traceID trace.TraceID) map[string][]tracetest.SpanStub {
	out := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == traceID {
			out[s.Name] = append(out[s.Name], s)
		}
	}
	return out
}

// A regeneration's span begins a trace of its own, linked to its parent
// runbook's span; a cancellation emits the runbook's span and its wait's,
// both ended in error, the wait's with its park as an event.
func TestRegenerationsLinkAndCancellationsEndSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	b := setup(t, traced(exp))
	b.run(t)
	parent := b.submit(t, `(t.echo :v "p" :as @e)`, nil)
	b.waitStatus(t, parent, rbtype.RunbookComplete)
	parentSpan := spanNamed(t, exp, "runbook")

	sub, err := b.engine.Regenerate(b.ctx, parent, runtime.Regeneration{Actor: "ops"})
	require.NoError(t, err)
	v := b.waitStatus(t, sub.ID, rbtype.RunbookComplete)
	require.Equal(t, fmt.Sprintf("%x", sub.ID[:]), v.TraceID)
	require.Equal(t, parent.String(), v.CorrelationID, "a regeneration keeps its parent's correlation id")
	var child tracetest.SpanStub
	require.Eventually(t, func() bool {
		rb := spansOf(exp, trace.TraceID(sub.ID))["runbook"]
		if len(rb) == 1 {
			child = rb[0]
		}
		return len(rb) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, child.Links, 1)
	require.Equal(t, parentSpan.SpanContext.TraceID(), child.Links[0].SpanContext.TraceID())
	require.Equal(t, parentSpan.SpanContext.SpanID(), child.Links[0].SpanContext.SpanID())

	waiting := b.submit(t, `(t.wait :as @w)`, nil)
	b.waitState(t, waiting, "parked")
	require.NoError(t, b.engine.Cancel(b.ctx, waiting, "carol"))
	spans := spansOf(exp, trace.TraceID(waiting))
	require.Len(t, spans["runbook"], 1)
	require.Len(t, spans["t.wait"], 1)
	w := spans["t.wait"][0]
	require.Equal(t, "Error", w.Status.Code.String())
	require.Equal(t, spans["runbook"][0].SpanContext.SpanID(), w.Parent.SpanID())
	require.Len(t, w.Events, 1)
	require.Equal(t, "parked", w.Events[0].Name)
}
