package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/tracing"
)

// startTracing starts the OpenTelemetry SDK when the standard variables
// ask for OTLP export: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set (docs/design/semantics.md section 2). The
// exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, certificates, compression), the SDK OTEL_TRACES_SAMPLER and the
// batch processor's OTEL_BSP_*; the resource takes OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES, with service.name "rbd" by default.
//
// Otherwise it returns a nil provider, and rbd runs with no SDK at all:
// the engine then makes no spans, and tracing costs next to nothing. The
// stop function flushes the spans still queued; rbd calls it once the
// engine has stopped.
func startTracing(ctx context.Context, getenv func(string) string, log *slog.Logger) (trace.TracerProvider, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, none, nil
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return nil, none, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		// Only the HTTP exporter is built in: sending HTTP to a gRPC
		// port would fail quietly, span after span.
		return nil, none, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: rbd exports traces with OTLP over HTTP only (http/protobuf, port 4318 by default)", protocol)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "rbd")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the default
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID())
	if err != nil {
		log.Warn("tracing: part of the resource could not be detected", "err", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// Spans carry the ids derived from runbooks and attempts, not
		// random ones: see tracing.
		sdktrace.WithIDGenerator(tracing.IDGenerator{}),
	)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: exporting spans failed", "err", err)
	}))
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	log.Info("tracing: exporting spans with OTLP over HTTP", "endpoint", redactEndpoint(endpoint))
	return tp, tp.Shutdown, nil
}

// redactEndpoint drops credentials and the query from an endpoint, for
// the log.
func redactEndpoint(endpoint string) string {
	if i := strings.Index(endpoint, "@"); i >= 0 {
		if j := strings.Index(endpoint, "://"); j >= 0 && j < i {
			endpoint = endpoint[:j+3] + endpoint[i+1:]
		}
	}
	if i := strings.IndexByte(endpoint, '?'); i >= 0 {
		endpoint = endpoint[:i]
	}
	return endpoint
}
