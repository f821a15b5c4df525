package runtime

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
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
	attrRunbookID     = attribute.Key("rbd.runbook.id")
	attrTenant        = attribute.Key("rbd.tenant")
	attrCorrelationID = attribute.Key("rbd.correlation_id")
	attrStatus        = attribute.Key("rbd.runbook.status")
	attrStep          = attribute.Key("rbd.step.key")
	attrVerb          = attribute.Key("rbd.step.verb")
	attrAttempt       = attribute.Key("rbd.step.attempt")
	attrAttemptID     = attribute.Key("rbd.attempt.id")
	attrOutcome       = attribute.Key("rbd.attempt.outcome")
	attrErrorCode     = attribute.Key("rbd.error.code")
	attrCache         = attribute.Key("rbd.cache")
	attrWorker        = attribute.Key("rbd.worker")
	attrCorrelKey     = attribute.Key("rbd.correlation_key")
	attrLink          = attribute.Key("rbd.link")
)

// attemptCancelled is the outcome of an attempt whose wait a cancellation
// ended: its span says so; the ledger keeps the park.
const attemptCancelled = "cancelled"

// finishedAttempt is an attempt to emit as a span once its transaction
// commits.
type finishedAttempt struct {
	trace      runbookTrace
	runbookID  uuid.UUID
	tenant     string
	step, verb string
	attempt    int
	id         uuid.UUID
	start, end time.Time
	outcome    string
	code       rbtype.ErrorCode
	cache      string
	// wait is the park the attempt waited in, if it parked.
	wait *parkWait
}

// parkWait is a park an attempt waited in: since when, on which key, and
// the span of the notification that ended it (invalid when none said).
type parkWait struct {
	parkedAt time.Time
	key      string
	link     trace.SpanContext
}

// tracing reports whether spans are emitted.
func (t *transition) tracing() bool { return t.m.tracer != nil }

// runbookTrace is the runbook's trace context, worked out once per
// transaction.
func (t *transition) runbookTrace() runbookTrace {
	if t.trace == nil {
		rt := traceOf(t.rb)
		t.trace = &rt
	}
	return *t.trace
}

// sawPark notes the park an attempt ends, for its span: its wait, and the
// traceparent the notification that ended it came with.
func (t *transition) sawPark(s *driver.Step, inv *driver.Invocation, traceparent string) {
	if !t.tracing() {
		return
	}
	if t.parks == nil {
		t.parks = map[int64]*parkWait{}
	}
	t.parks[s.ID] = &parkWait{parkedAt: inv.ParkedAt, key: inv.CorrelationKey, link: parseTraceParent(traceparent)}
}

// attemptEnded queues the span of an attempt that ended.
func (t *transition) attemptEnded(s *driver.Step, attempt int, id uuid.UUID, outcome string, code rbtype.ErrorCode, cache string) {
	if !t.tracing() {
		return
	}
	start := t.now
	if s.StartedAt != nil && attempt > 0 {
		start = *s.StartedAt
	}
	wait := t.parks[s.ID]
	delete(t.parks, s.ID)
	t.spans = append(t.spans, finishedAttempt{
		trace: t.runbookTrace(), runbookID: t.rb.ID, tenant: t.rb.Tenant, step: s.Key, verb: s.Verb, attempt: attempt,
		id: id, start: start, end: t.now, outcome: outcome, code: code, cache: cache, wait: wait,
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
