package machine

import (
	"fmt"
	"unicode"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/rbtype"
)

// Trace context (docs/design/semantics.md section 2). A runbook keeps, once, the trace
// it was submitted in (its runbook row: trace id, the submitter's span,
// flags, tracestate, correlation id); every other id is derived, so that
// no step write grows and a restarted daemon names everything as before:
//
//   - without a traceparent, the trace id is the runbook id's 16 bytes,
//     and without an X-Correlation-Id the correlation id is the runbook
//     id (nothing is stored: runbooks stored before traces were kept read
//     the same way);
//   - the runbook's span id is 8 bytes of a UUIDv5 of the runbook id;
//   - an attempt's id is UUIDv5 of runbook, step and attempt (ledger.go),
//     and its span id the first 8 bytes of that.

// MaxCorrelationID bounds an X-Correlation-Id: it is kept on the runbook
// and copied into every ledger row and event the API shows.
const MaxCorrelationID = 128

// namespaceRunbookSpan names runbook span ids.
var namespaceRunbookSpan = uuid.MustParse("0b7d6c1e-3f2a-5d84-9c61-2e8f4a7b9d30")

// CheckCorrelationID says what is wrong with a correlation id a request
// brought, "" when nothing is: at most MaxCorrelationID bytes of printable
// characters, no spaces at either end.
func CheckCorrelationID(id string) string {
	if len(id) > MaxCorrelationID {
		return fmt.Sprintf("is %d bytes long; at most %d are allowed", len(id), MaxCorrelationID)
	}
	for _, c := range id {
		if c == unicode.ReplacementChar || !unicode.IsPrint(c) {
			return "holds a character that is not printable"
		}
	}
	return ""
}

// NewTrace is what a new runbook stores of the trace it is submitted in:
// the submitter's span when the request had a valid traceparent, and the
// correlation id when it had one. What is left empty is derived on read.
func NewTrace(parent trace.SpanContext, correlationID string) rbtype.Trace {
	t := rbtype.Trace{CorrelationID: correlationID}
	if parent.IsValid() {
		t.TraceID, t.ParentSpanID = parent.TraceID().String(), parent.SpanID().String()
		t.Flags, t.State = byte(parent.TraceFlags()), parent.TraceState().String()
	}
	return t
}

// runbookTrace is a runbook's trace context with its defaults filled in.
type runbookTrace struct {
	// Span is the runbook's span: its trace, its derived span id, the
	// submitter's flags and tracestate.
	Span trace.SpanContext
	// Parent is the submitter's span (invalid when the runbook began its
	// own trace).
	Parent        trace.SpanContext
	CorrelationID string
}

// TraceOf fills in a runbook's trace context.
func TraceOf(rb *rbtype.Runbook) runbookTrace {
	return traceFrom(rb.ID, rb.Trace)
}

func traceFrom(id uuid.UUID, t rbtype.Trace) runbookTrace {
	out := runbookTrace{CorrelationID: CorrelationIDOf(id, t.CorrelationID)}
	tid := TraceIDOf(id, t.TraceID)
	flags := trace.FlagsSampled
	var state trace.TraceState
	if t.TraceID != "" {
		flags = trace.TraceFlags(t.Flags)
		state, _ = trace.ParseTraceState(t.State)
		if sid, err := trace.SpanIDFromHex(t.ParentSpanID); err == nil {
			out.Parent = trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: state, Remote: true,
			})
		}
	}
	out.Span = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: RunbookSpanID(id), TraceFlags: flags, TraceState: state,
	})
	return out
}

// TraceIDOf is a runbook's trace id: the stored one, or its own id's.
func TraceIDOf(id uuid.UUID, stored string) trace.TraceID {
	if tid, err := trace.TraceIDFromHex(stored); err == nil {
		return tid
	}
	return trace.TraceID(id)
}

// CorrelationIDOf is a runbook's correlation id: the stored one, or its
// own id.
func CorrelationIDOf(id uuid.UUID, stored string) string {
	if stored != "" {
		return stored
	}
	return id.String()
}

// RunbookSpanID is the id of a runbook's span.
func RunbookSpanID(id uuid.UUID) trace.SpanID {
	u := uuid.NewSHA1(namespaceRunbookSpan, id[:])
	return trace.SpanID(u[:8])
}

// AttemptSpanID is the id of an attempt's span: the first 8 bytes of its
// attempt id.
func AttemptSpanID(attemptID uuid.UUID) trace.SpanID {
	return trace.SpanID(attemptID[:8])
}

// AttemptSpan is the span context of an attempt: a child of the
// runbook's span. http.call and http.start send it as their traceparent.
func (rt runbookTrace) AttemptSpan(attemptID uuid.UUID) trace.SpanContext {
	return rt.Span.WithSpanID(AttemptSpanID(attemptID))
}

// TraceParentOf writes a span context as a W3C traceparent ("" for an
// invalid one), to keep with a notification.
func TraceParentOf(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// TraceAttrs are the trace ids a log line about a step's call carries:
// its trace and span, and its attempt's id when it is a step's attempt
// (uuid.Nil for a compensation or an escalation, which have none). The
// values format themselves as hex when a line is written.
func TraceAttrs(span trace.SpanContext, attempt uuid.UUID) []any {
	attrs := []any{"trace_id", span.TraceID(), "span_id", span.SpanID()}
	if attempt != uuid.Nil {
		attrs = append(attrs, "attempt_id", attempt)
	}
	return attrs
}
