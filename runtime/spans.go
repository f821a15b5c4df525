package runtime

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/tracing"
)

// emitSpans emits the spans of what a committed advance finished: its
// attempts, and the runbooks that finished.
func (e *Engine) emitSpans(ctx context.Context, settled *machine.Round) {
	if e.machine.Tracer == nil || settled == nil {
		return
	}
	for _, t := range settled.States {
		for i := range t.Spans {
			e.emitAttempt(ctx, &t.Spans[i])
		}
		if t.Runbook != nil && t.Runbook.Finished {
			e.emitRunbook(ctx, t.Rb, t.Rb.Status, t.Now)
		}
	}
}

// emitAttempt emits an attempt's span: a child of its runbook's span.
func (e *Engine) emitAttempt(ctx context.Context, a *machine.FinishedAttempt) {
	parent := trace.ContextWithSpanContext(ctx, a.Trace.Span)
	ctx = tracing.ContextWithIDs(parent, a.Trace.Span.TraceID(), machine.AttemptSpanID(a.Id))
	attrs := []attribute.KeyValue{
		machine.AttrRunbookID.String(a.RunbookID.String()), machine.AttrTenant.String(a.Tenant),
		machine.AttrCorrelationID.String(a.Trace.CorrelationID), machine.AttrStep.String(a.Step), machine.AttrVerb.String(a.Verb),
		machine.AttrAttempt.Int(a.Attempt), machine.AttrAttemptID.String(a.Id.String()), machine.AttrOutcome.String(a.Outcome),
		machine.AttrCache.String(a.Cache), machine.AttrWorker.String(e.workerID),
	}
	if a.Code != "" {
		attrs = append(attrs, machine.AttrErrorCode.String(string(a.Code)))
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(a.Start), trace.WithAttributes(attrs...)}
	if a.Wait != nil && a.Wait.Link.IsValid() {
		// The notification's sender caused the resume: a link, not a
		// parent, since the attempt began before it.
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: a.Wait.Link,
			Attributes: []attribute.KeyValue{machine.AttrLink.String("notification")}}))
	}
	_, span := e.machine.Tracer.Start(ctx, a.Verb, opts...)
	if a.Wait != nil {
		span.AddEvent("parked", trace.WithTimestamp(a.Wait.ParkedAt), trace.WithAttributes(machine.AttrCorrelKey.String(a.Wait.Key)))
		if a.Outcome != machine.AttemptCancelled {
			span.AddEvent("resumed", trace.WithTimestamp(a.End))
		}
	}
	if a.Outcome == machine.AttemptFailed || a.Outcome == machine.AttemptCancelled {
		span.SetStatus(codes.Error, string(a.Code))
	}
	span.End(trace.WithTimestamp(a.End))
}

// emitRunbook emits a runbook's span, from its submission to end: a child
// of the submitter's span, or the root of its own trace. A regeneration's
// links to its parent runbook's span.
func (e *Engine) emitRunbook(ctx context.Context, rb *driver.Runbook, status rbtype.RunbookStatus, end time.Time) {
	rt := machine.TraceOf(rb)
	sctx := ctx
	if rt.Parent.IsValid() {
		sctx = trace.ContextWithRemoteSpanContext(ctx, rt.Parent)
	}
	sctx = tracing.ContextWithIDs(sctx, rt.Span.TraceID(), rt.Span.SpanID())
	opts := []trace.SpanStartOption{
		trace.WithTimestamp(rb.CreatedAt), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(machine.AttrRunbookID.String(rb.ID.String()), machine.AttrTenant.String(rb.Tenant),
			machine.AttrCorrelationID.String(rt.CorrelationID), machine.AttrStatus.String(string(status))),
	}
	if p := rb.Lineage.Parent; p != uuid.Nil {
		if st, err := e.store.RunbookStatus(ctx, p); err == nil {
			link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: machine.TraceIDOf(p, st.TraceID), SpanID: machine.RunbookSpanID(p),
				TraceFlags: trace.FlagsSampled, Remote: true})
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link,
				Attributes: []attribute.KeyValue{machine.AttrLink.String("regenerated_from")}}))
		}
	}
	_, span := e.machine.Tracer.Start(sctx, "runbook", opts...)
	switch status {
	case rbtype.RunbookFailed, rbtype.RunbookEscalated, rbtype.RunbookCancelled, rbtype.RunbookPartial:
		span.SetStatus(codes.Error, string(status))
	}
	span.End(trace.WithTimestamp(end))
}
