package machine

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/rbtype"
)

// OpenTelemetry spans (docs/design/semantics.md section 2): one for the runbook, one
// per step attempt, its child, the park wait an event on it. A runbook may
// last days and outlive the daemon that started it, so no span is held
// open: each is emitted once what it stands for has finished and its
// transaction has committed, with the times the database holds and the
// ids trace.go derives (tracing.IDGenerator gives them to the SDK). A
// restarted daemon emits the same ids; a transaction retried after a
// failure emits nothing twice, since only committed ones emit.
//
// Without a tracer (Config.TracerProvider nil) none of this runs: the
// transition collects nothing and no span is made.

// Attribute keys of rbd's spans.
const (
	AttrRunbookID     = attribute.Key("rbd.runbook.id")
	AttrTenant        = attribute.Key("rbd.tenant")
	AttrCorrelationID = attribute.Key("rbd.correlation_id")
	AttrStatus        = attribute.Key("rbd.runbook.status")
	AttrStep          = attribute.Key("rbd.step.key")
	AttrVerb          = attribute.Key("rbd.step.verb")
	AttrAttempt       = attribute.Key("rbd.step.attempt")
	AttrAttemptID     = attribute.Key("rbd.attempt.id")
	AttrOutcome       = attribute.Key("rbd.attempt.outcome")
	AttrErrorCode     = attribute.Key("rbd.error.code")
	AttrCache         = attribute.Key("rbd.cache")
	AttrWorker        = attribute.Key("rbd.worker")
	AttrCorrelKey     = attribute.Key("rbd.correlation_key")
	AttrLink          = attribute.Key("rbd.link")
)

// AttemptCancelled is the outcome of an attempt whose wait a cancellation
// ended: its span says so; the ledger keeps the park.
const AttemptCancelled = "cancelled"

// FinishedAttempt is an attempt to emit as a span once its transaction
// commits.
type FinishedAttempt struct {
	Trace      runbookTrace
	RunbookID  uuid.UUID
	Tenant     string
	Step, Verb string
	Attempt    int
	Id         uuid.UUID
	Start, End time.Time
	Outcome    string
	Code       rbtype.ErrorCode
	Cache      string
	// Wait is the park the attempt waited in, if it parked.
	Wait *parkWait
}

// parkWait is a park an attempt waited in: since when, on which key, and
// the span of the notification that ended it (invalid when none said).
type parkWait struct {
	ParkedAt time.Time
	Key      string
	Link     trace.SpanContext
}

// tracing reports whether spans are emitted.
func (t *transition) tracing() bool { return t.m.Tracer != nil }

// runbookTrace is the runbook's trace context, worked out once per
// transaction.
func (t *transition) runbookTrace() runbookTrace {
	if t.trace == nil {
		rt := TraceOf(t.Rb)
		t.trace = &rt
	}
	return *t.trace
}

// sawPark notes the park an attempt ends, for its span: its wait, and the
// traceparent the notification that ended it came with.
func (t *transition) sawPark(s *rbtype.Step, inv *rbtype.Invocation, traceparent string) {
	if !t.tracing() {
		return
	}
	if t.parks == nil {
		t.parks = map[int64]*parkWait{}
	}
	t.parks[s.ID] = &parkWait{ParkedAt: inv.ParkedAt, Key: inv.CorrelationKey, Link: parseTraceParent(traceparent)}
}

// attemptEnded queues the span of an attempt that ended.
func (t *transition) attemptEnded(s *rbtype.Step, attempt int, id uuid.UUID, outcome string, code rbtype.ErrorCode, cache string) {
	if !t.tracing() {
		return
	}
	start := t.Now
	if s.StartedAt != nil && attempt > 0 {
		start = *s.StartedAt
	}
	wait := t.parks[s.ID]
	delete(t.parks, s.ID)
	t.Spans = append(t.Spans, FinishedAttempt{
		Trace: t.runbookTrace(), RunbookID: t.Rb.ID, Tenant: t.Rb.Tenant, Step: s.Key, Verb: s.Verb, Attempt: attempt,
		Id: id, Start: start, End: t.Now, Outcome: outcome, Code: code, Cache: cache, Wait: wait,
	})
}

// parseTraceParent reads a W3C traceparent; invalid when it is not one.
func parseTraceParent(h string) trace.SpanContext {
	if h == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": h}))
}
