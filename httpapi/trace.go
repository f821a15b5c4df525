package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/machine"
)

// The trace context a request brings (docs/design/semantics.md section 2): W3C
// traceparent and tracestate, and X-Correlation-Id.
const (
	TraceParentHeader   = "traceparent"
	TraceStateHeader    = "tracestate"
	CorrelationIDHeader = "X-Correlation-Id"
)

// senderSpan is the span a request's traceparent (and tracestate) names;
// invalid when it has none or a malformed one. W3C Trace Context says a
// receiver that cannot parse traceparent starts a new trace, and never
// refuses the request for it; a malformed tracestate is dropped and the
// traceparent kept.
func senderSpan(r *http.Request) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return trace.SpanContextFromContext(ctx)
}

// correlationIDOf reads and checks a request's X-Correlation-Id ("" when
// it has none). Unlike a traceparent, which a proxy may have mangled, a
// correlation id is the caller's own word, kept on the runbook and shown
// on every event and ledger row: one that is too long or unprintable is
// refused (400), so the caller learns of it rather than losing it.
func correlationIDOf(r *http.Request) (string, error) {
	id := r.Header.Get(CorrelationIDHeader)
	if problem := machine.CheckCorrelationID(id); problem != "" {
		return "", errorf(http.StatusBadRequest, CodeInvalidRequest, "the %s header %s", CorrelationIDHeader, problem)
	}
	return id, nil
}

// origin is what a request that starts a runbook says about where it came
// from, in its headers: its Idempotency-Key, its X-Correlation-Id and the
// span that sent it. Submit and regenerate read the same three.
type origin struct {
	idempotencyKey string
	correlationID  string
	parent         trace.SpanContext
}

// originOf reads and checks a request's origin headers.
func originOf(r *http.Request) (origin, error) {
	key, err := idempotencyKeyOf(r)
	if err != nil {
		return origin{}, err
	}
	correlationID, err := correlationIDOf(r)
	if err != nil {
		return origin{}, err
	}
	return origin{idempotencyKey: key, correlationID: correlationID, parent: senderSpan(r)}, nil
}
