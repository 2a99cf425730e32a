package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// instrumentation names the tracer of every vmplane span.
const instrumentation = "github.com/vmplane/vmplane"

// Config says where spans go.
type Config struct {
	// Exporter is "" or "none" (no export; traceparent still travels),
	// "stdout" (JSON on standard output), "file:PATH" (JSON appended to
	// PATH) or "otlp" (OTLP/gRPC to Endpoint).
	Exporter string
	// Endpoint is the OTLP collector's host:port (default localhost:4317).
	Endpoint string
	// Insecure sends OTLP without TLS (a collector on the same machine).
	Insecure bool
	// SampleRatio is the share of new traces kept, 0..1 (default 1). A
	// record whose parent was sampled is always sampled (parent-based), so a
	// job is kept whole or not at all.
	SampleRatio float64
	// Service is service.name of the resource, e.g. "vmplane-gateway".
	Service string
}

// ConfigFromEnv reads VMPLANE_TRACE_EXPORTER, VMPLANE_OTLP_ENDPOINT,
// VMPLANE_OTLP_INSECURE and VMPLANE_TRACE_SAMPLE_RATIO.
func ConfigFromEnv(getenv func(string) string, service string) (Config, error) {
	c := Config{
		Exporter: getenv("VMPLANE_TRACE_EXPORTER"),
		Endpoint: getenv("VMPLANE_OTLP_ENDPOINT"),
		Insecure: getenv("VMPLANE_OTLP_INSECURE") == "true" || getenv("VMPLANE_OTLP_INSECURE") == "1",
		Service:  service,
	}
	if s := getenv("VMPLANE_TRACE_SAMPLE_RATIO"); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r < 0 || r > 1 {
			return c, fmt.Errorf("VMPLANE_TRACE_SAMPLE_RATIO %q: want a number from 0 to 1", s)
		}
		c.SampleRatio = r
	} else {
		c.SampleRatio = 1
	}
	return c, nil
}

// Setup installs the global tracer provider and the W3C propagator and
// returns the function that flushes and stops the exporter.
func Setup(ctx context.Context, c Config) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	exp, closer, err := exporter(ctx, c)
	if err != nil {
		return nil, err
	}
	if exp == nil {
		return func(context.Context) error { return nil }, nil
	}
	tp := NewProvider(exp, c.SampleRatio, c.Service)
	Install(tp)
	return func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		if closer != nil {
			err = errors.Join(err, closer.Close())
		}
		return err
	}, nil
}

// NewProvider is the tracer provider over exp with parent-based ratio
// sampling; tests pass an in-memory exporter.
func NewProvider(exp sdktrace.SpanExporter, ratio float64, service string) *sdktrace.TracerProvider {
	if service == "" {
		service = "vmplane"
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	sampler := sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	if ratio >= 1 {
		sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sampler),
		sdktrace.WithResource(res),
	)
}

func exporter(ctx context.Context, c Config) (sdktrace.SpanExporter, io.Closer, error) {
	switch {
	case c.Exporter == "" || c.Exporter == "none":
		return nil, nil, nil
	case c.Exporter == "stdout":
		e, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
		return e, nil, err
	case strings.HasPrefix(c.Exporter, "file:"):
		path := strings.TrimPrefix(c.Exporter, "file:")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("trace file: %w", err)
		}
		e, err := stdouttrace.New(stdouttrace.WithWriter(f))
		return e, f, err
	case c.Exporter == "otlp":
		opts := []otlptracegrpc.Option{}
		if c.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpoint(c.Endpoint))
		}
		if c.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		e, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("otlp exporter: %w", err)
		}
		return e, nil, nil
	}
	return nil, nil, fmt.Errorf("trace exporter %q: want none, stdout, file:PATH or otlp", c.Exporter)
}

// enabled says whether a tracer provider was installed: without one the
// hot paths only carry the traceparent they received and build no span.
var enabled atomic.Bool

// Install makes tp the global tracer provider (Setup does; tests install
// one over an in-memory exporter).
func Install(tp trace.TracerProvider) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetTracerProvider(tp)
	enabled.Store(true)
}

// Tracer is the tracer of vmplane's spans, from the global provider.
func Tracer() trace.Tracer { return otel.Tracer(instrumentation) }

// Uninstall puts back the no-op tracer provider (tests that installed an
// in-memory one).
func Uninstall() {
	otel.SetTracerProvider(noop.NewTracerProvider())
	enabled.Store(false)
}
