package runtime

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/tracing"
)

// emitSpans emits the spans of what a committed advance finished: its
// attempts, and the runbooks that finished.
func (e *Engine) emitSpans(ctx context.Context, settled *round) {
	if e.machine.tracer == nil || settled == nil {
		return
	}
	for _, t := range settled.states {
		for i := range t.spans {
			e.emitAttempt(ctx, &t.spans[i])
		}
		if t.runbook != nil && t.runbook.Finished {
			e.emitRunbook(ctx, t.rb, t.rb.Status, t.now)
		}
	}
}

// emitAttempt emits an attempt's span: a child of its runbook's span.
func (e *Engine) emitAttempt(ctx context.Context, a *finishedAttempt) {
	parent := trace.ContextWithSpanContext(ctx, a.trace.span)
	ctx = tracing.ContextWithIDs(parent, a.trace.span.TraceID(), attemptSpanID(a.id))
	attrs := []attribute.KeyValue{
		attrRunbookID.String(a.runbookID.String()), attrTenant.String(a.tenant),
		attrCorrelationID.String(a.trace.correlationID), attrStep.String(a.step), attrVerb.String(a.verb),
		attrAttempt.Int(a.attempt), attrAttemptID.String(a.id.String()), attrOutcome.String(a.outcome),
		attrCache.String(a.cache), attrWorker.String(e.workerID),
	}
	if a.code != "" {
		attrs = append(attrs, attrErrorCode.String(string(a.code)))
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(a.start), trace.WithAttributes(attrs...)}
	if a.wait != nil && a.wait.link.IsValid() {
		// The notification's sender caused the resume: a link, not a
		// parent, since the attempt began before it.
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: a.wait.link,
			Attributes: []attribute.KeyValue{attrLink.String("notification")}}))
	}
	_, span := e.machine.tracer.Start(ctx, a.verb, opts...)
	if a.wait != nil {
		span.AddEvent("parked", trace.WithTimestamp(a.wait.parkedAt), trace.WithAttributes(attrCorrelKey.String(a.wait.key)))
		if a.outcome != attemptCancelled {
			span.AddEvent("resumed", trace.WithTimestamp(a.end))
		}
	}
	if a.outcome == attemptFailed || a.outcome == attemptCancelled {
		span.SetStatus(codes.Error, string(a.code))
	}
	span.End(trace.WithTimestamp(a.end))
}

// emitRunbook emits a runbook's span, from its submission to end: a child
// of the submitter's span, or the root of its own trace. A regeneration's
// links to its parent runbook's span.
func (e *Engine) emitRunbook(ctx context.Context, rb *driver.Runbook, status rbtype.RunbookStatus, end time.Time) {
	rt := traceOf(rb)
	sctx := ctx
	if rt.parent.IsValid() {
		sctx = trace.ContextWithRemoteSpanContext(ctx, rt.parent)
	}
	sctx = tracing.ContextWithIDs(sctx, rt.span.TraceID(), rt.span.SpanID())
	opts := []trace.SpanStartOption{
		trace.WithTimestamp(rb.CreatedAt), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrRunbookID.String(rb.ID.String()), attrTenant.String(rb.Tenant),
			attrCorrelationID.String(rt.correlationID), attrStatus.String(string(status))),
	}
	if p := rb.Lineage.Parent; p != uuid.Nil {
		if st, err := e.store.RunbookStatus(ctx, p); err == nil {
			link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceIDOf(p, st.TraceID), SpanID: runbookSpanID(p),
				TraceFlags: trace.FlagsSampled, Remote: true})
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link,
				Attributes: []attribute.KeyValue{attrLink.String("regenerated_from")}}))
		}
	}
	_, span := e.machine.tracer.Start(sctx, "runbook", opts...)
	switch status {
	case rbtype.RunbookFailed, rbtype.RunbookEscalated, rbtype.RunbookCancelled, rbtype.RunbookPartial:
		span.SetStatus(codes.Error, string(status))
	}
	span.End(trace.WithTimestamp(end))
}
