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
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
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
	// PATH) or "otlp" (OTLP to Endpoint, or where the OTEL_EXPORTER_OTLP_*
	// variables say).
	Exporter string
	// Protocol is the OTLP protocol: "grpc" (the default) or
	// "http/protobuf".
	Protocol string
	// Endpoint is the OTLP collector's host:port; empty leaves it to
	// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else localhost:4317 (gRPC) or
	// localhost:4318 (HTTP).
	Endpoint string
	// Insecure sends OTLP without TLS (a collector on the same machine);
	// false leaves it to OTEL_EXPORTER_OTLP_(TRACES_)INSECURE or the
	// endpoint's scheme (http://).
	Insecure bool
	// SampleRatio, when SampleSet, is the share of new traces kept, 0..1.
	// A record whose parent was sampled is always sampled (parent-based),
	// so a job is kept whole or not at all. Unset leaves the sampler to
	// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, and without them
	// every trace is kept (parent-based).
	SampleRatio float64
	SampleSet   bool
	// Service is the default service.name of the resource, e.g.
	// "vmplane-gateway"; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override it and add to the resource.
	Service string
}

// ConfigFromEnv reads the standard OpenTelemetry variables and vmplane's
// own, which win where both are set (they came first):
//
//   - OTEL_SDK_DISABLED=true: no spans are made or exported (the
//     traceparent still travels from input to output).
//   - VMPLANE_TRACE_EXPORTER (none, stdout, file:PATH, otlp), else
//     OTEL_TRACES_EXPORTER (otlp, console, none); with neither, otlp when
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
//     set, else none, so that a process with no collector tries none.
//   - OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: grpc (default) or
//     http/protobuf. The OTLP exporters read the other
//     OTEL_EXPORTER_OTLP_* variables themselves (endpoint, insecure,
//     headers, certificate, compression, timeout); VMPLANE_OTLP_ENDPOINT
//     (host:port) and VMPLANE_OTLP_INSECURE override the first two.
//   - VMPLANE_TRACE_SAMPLE_RATIO (0..1, parent-based), else
//     OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, read by the SDK.
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read by the SDK's
//     resource, over the default service name.
//
// OTEL_BSP_* (batching) and OTEL_SPAN_*_LIMIT are read by the SDK as well.
func ConfigFromEnv(getenv func(string) string, service string) (Config, error) {
	c := Config{
		Exporter: getenv("VMPLANE_TRACE_EXPORTER"),
		Endpoint: getenv("VMPLANE_OTLP_ENDPOINT"),
		Insecure: getenv("VMPLANE_OTLP_INSECURE") == "true" || getenv("VMPLANE_OTLP_INSECURE") == "1",
		Service:  service,
		Protocol: firstOf(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL")),
	}
	if c.Exporter == "" {
		switch e := getenv("OTEL_TRACES_EXPORTER"); e {
		case "otlp", "none":
			c.Exporter = e
		case "console":
			c.Exporter = "stdout"
		case "":
			if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
				c.Exporter = "otlp"
			}
		default:
			return c, fmt.Errorf("OTEL_TRACES_EXPORTER %q: want otlp, console or none", e)
		}
	}
	if d := strings.ToLower(strings.TrimSpace(getenv("OTEL_SDK_DISABLED"))); d == "true" {
		c.Exporter = "none"
	}
	switch c.Protocol {
	case "", "grpc", "http/protobuf":
	default:
		return c, fmt.Errorf("OTLP protocol %q: want grpc or http/protobuf", c.Protocol)
	}
	if s := getenv("VMPLANE_TRACE_SAMPLE_RATIO"); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r < 0 || r > 1 {
			return c, fmt.Errorf("VMPLANE_TRACE_SAMPLE_RATIO %q: want a number from 0 to 1", s)
		}
		c.SampleRatio, c.SampleSet = r, true
	}
	return c, nil
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
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
	res, err := newResource(ctx, c.Service)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if c.SampleSet {
		opts = append(opts, sdktrace.WithSampler(ratioSampler(c.SampleRatio)))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	Install(tp)
	return func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		if closer != nil {
			err = errors.Join(err, closer.Close())
		}
		return err
	}, nil
}

// newResource is service.name service, then what OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES say over it, and the SDK's own attributes.
func newResource(ctx context.Context, service string) (*resource.Resource, error) {
	if service == "" {
		service = "vmplane"
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last: the environment's attributes win
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return res, nil
}

func ratioSampler(ratio float64) sdktrace.Sampler {
	if ratio >= 1 {
		return sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
}

// NewProvider is the tracer provider over exp with parent-based ratio
// sampling; tests pass an in-memory exporter.
func NewProvider(exp sdktrace.SpanExporter, ratio float64, service string) *sdktrace.TracerProvider {
	if service == "" {
		service = "vmplane"
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(ratioSampler(ratio)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
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
	case c.Exporter == "otlp" && c.Protocol == "http/protobuf":
		opts := []otlptracehttp.Option{}
		if c.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpoint(c.Endpoint))
		}
		if c.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		e, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("otlp exporter: %w", err)
		}
		return e, nil, nil
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
