// Package tracing holds what rbd's OpenTelemetry spans need beyond the
// OpenTelemetry API: the ids a span is to have, carried in its context,
// and an IDGenerator for the SDK that hands them out.
//
// A runbook may last days and outlive the daemon that started it, so its
// spans cannot be held open in memory: the engine emits each one when
// what it stands for has finished, with the start and end times it
// stored, and with ids derived from the runbook, step and attempt. An
// SDK's own generator would pick random ids, and the spans emitted by two
// daemons (or by one before and after a restart) would not fit together;
// this generator gives the span the ids its context asks for.
//
// The package depends on the OpenTelemetry API alone: the engine imports
// it, and only rbd's wiring (cmd/rbd) imports the SDK and the exporter.
package tracing

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"
)

// wantedKey is the context key of the ids the next span is to have.
type wantedKey struct{}

// wanted is a span's ids, as ContextWithIDs asked.
type wanted struct {
	traceID trace.TraceID
	spanID  trace.SpanID
}

// ContextWithIDs asks that the span started with ctx have these ids: the
// trace id when it starts a trace (it has no parent), the span id always.
// A span started with a parent keeps its parent's trace id.
func ContextWithIDs(ctx context.Context, traceID trace.TraceID, spanID trace.SpanID) context.Context {
	return context.WithValue(ctx, wantedKey{}, wanted{traceID: traceID, spanID: spanID})
}

// IDGenerator gives a span the ids ContextWithIDs put in its context,
// and random ones to spans started without (any other instrumentation
// sharing the provider). It implements the SDK's trace.IDGenerator; pass
// it with sdktrace.WithIDGenerator.
type IDGenerator struct{}

// NewIDs returns the ids of a span that starts a trace.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok && w.traceID.IsValid() && w.spanID.IsValid() {
		return w.traceID, w.spanID
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		_, _ = rand.Read(tid[:])
	}
	return tid, randomSpanID()
}

// NewSpanID returns the id of a span with a parent in traceID's trace.
func (IDGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok && w.spanID.IsValid() {
		return w.spanID
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		_, _ = rand.Read(sid[:])
	}
	return sid
}
