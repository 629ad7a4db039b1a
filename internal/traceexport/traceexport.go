// Package traceexport sends explained slow requests (explain.Finding) to
// an OpenTelemetry collector as traces, over OTLP/HTTP with the
// OpenTelemetry Go SDK's exporter: each slow produce request is a trace
// whose root span is the request as the broker's wire saw it, with a
// child span for every part of its time the explanation placed (queued
// behind the previous request, its own append per partition, the appends
// it waited for, the wait for each follower with the follower's part,
// the response's send, the CPU waits and JVM pauses). It lands in Jaeger
// or Tempo beside the clients' own traces, found by topic, client id or
// cause.
//
// The spans carry the times the recording measured, not the export's:
// a request explained a minute late is still shown where it happened.
package traceexport

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kscope-dev/kscope/internal/explain"
)

// Config says where traces go and what the resource is.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP endpoint: "host:port" (plain
	// HTTP) or a URL, "http://host:4318" or "https://...": traces are
	// posted to its /v1/traces.
	Endpoint string
	// Service is service.name (default "kscope").
	Service string
	// Attributes are added to the resource, e.g. the broker's and the
	// cluster's id.
	Attributes map[string]string
	// Timeout bounds one export (default 10 s).
	Timeout time.Duration
}

// Exporter turns findings into spans and exports them in batches, in the
// background: Finding never waits for the network. Safe for concurrent
// use.
type Exporter struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// New starts an exporter; Shutdown sends what is left and stops it.
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	if cfg.Endpoint == "" {
		return nil, fmt.Errorf("traceexport: no endpoint")
	}
	if cfg.Service == "" {
		cfg.Service = "kscope"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(cfg.Timeout)}
	if strings.Contains(cfg.Endpoint, "://") {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(cfg.Endpoint, "/")+"/v1/traces"))
	} else {
		opts = append(opts, otlptracehttp.WithEndpoint(cfg.Endpoint), otlptracehttp.WithInsecure())
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("traceexport: %w", err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(cfg.Service)}
	for k, v := range cfg.Attributes {
		attrs = append(attrs, attribute.String(k, v))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	return &Exporter{tp: tp, tracer: tp.Tracer("github.com/kscope-dev/kscope/internal/traceexport")}, nil
}

// Shutdown exports the spans still queued and stops; ctx bounds it.
func (x *Exporter) Shutdown(ctx context.Context) error {
	return x.tp.Shutdown(ctx)
}

// Flush exports the spans queued so far; ctx bounds it.
func (x *Exporter) Flush(ctx context.Context) error {
	return x.tp.ForceFlush(ctx)
}

// Finding exports one explained request as a trace.
func (x *Exporter) Finding(f *explain.Finding) {
	ctx, root := x.tracer.Start(context.Background(), rootName(f),
		trace.WithTimestamp(f.Arrival), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(rootAttributes(f)...))
	for _, s := range Spans(f) {
		_, sp := x.tracer.Start(ctx, s.Name, trace.WithTimestamp(s.Start), trace.WithAttributes(s.Attributes...))
		sp.End(trace.WithTimestamp(s.End))
	}
	root.End(trace.WithTimestamp(f.End))
}

func rootName(f *explain.Finding) string {
	topics := make([]string, 0, len(f.Partitions))
	for _, p := range f.Partitions {
		if p.Topic != "" && !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	if len(topics) == 0 {
		return "produce"
	}
	return "produce " + strings.Join(topics, ",")
}

func rootAttributes(f *explain.Finding) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.MessagingSystemKafka,
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.client.id", f.ClientID),
		attribute.String("client.address", f.Client),
		attribute.String("server.address", f.Broker),
		attribute.Int("kafka.correlation_id", int(f.CorrelationID)),
		attribute.Int("kafka.api_version", int(f.APIVersion)),
		attribute.Float64("kscope.latency_ms", f.LatencyMs),
		attribute.String("kscope.cause", f.Cause),
		attribute.Float64("kscope.explained_ms", f.ExplainedMs),
		attribute.String("kscope.detail", f.Detail),
	}
	if f.Acks != nil {
		a = append(a, attribute.Int("kafka.acks", int(*f.Acks)))
	}
	if f.Root != "" {
		a = append(a, attribute.String("kscope.root", f.Root))
	}
	if len(f.Also) > 0 {
		a = append(a, attribute.StringSlice("kscope.also", f.Also))
	}
	if f.Follower != nil {
		a = append(a, attribute.Int("kscope.follower", int(*f.Follower)), attribute.String("kscope.follower_cause", f.FollowerCause))
	}
	if len(f.Partitions) > 0 {
		a = append(a, attribute.String("messaging.destination.name", f.Partitions[0].Topic),
			attribute.Int("messaging.destination.partition.id", int(f.Partitions[0].Partition)))
	}
	return a
}
