package telemetry

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the only propagation format on the wire: docs/design.md §3 names the
// `traceparent` header, so it does not follow the global propagator.
var w3c = propagation.TraceContext{}

// Inject writes ctx's span context into h as `traceparent` (and
// `tracestate` when set). A context without a valid span leaves h as it is,
// so a header already carried from an input survives.
func Inject(ctx context.Context, h map[string]string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, propagation.MapCarrier(h))
}

// Extract returns ctx with the remote span context found in h, if any.
func Extract(ctx context.Context, h map[string]string) context.Context {
	if h == nil {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier(h))
}

// RecordHeaders adapts a kgo record's headers to a propagation carrier.
type RecordHeaders struct{ R *kgo.Record }

// Get returns the first header named key.
func (c RecordHeaders) Get(key string) string {
	for _, h := range c.R.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set replaces the header named key, or appends it.
func (c RecordHeaders) Set(key, value string) {
	for i, h := range c.R.Headers {
		if h.Key == key {
			c.R.Headers[i].Value = []byte(value)
			return
		}
	}
	c.R.Headers = append(c.R.Headers, kgo.RecordHeader{Key: key, Value: []byte(value)})
}

// Keys lists the header names.
func (c RecordHeaders) Keys() []string {
	out := make([]string, len(c.R.Headers))
	for i, h := range c.R.Headers {
		out[i] = h.Key
	}
	return out
}

// InjectRecord writes ctx's span context into kr's headers.
func InjectRecord(ctx context.Context, kr *kgo.Record) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, RecordHeaders{kr})
}

// ExtractRecord returns ctx with the remote span context of kr's headers.
func ExtractRecord(ctx context.Context, kr *kgo.Record) context.Context {
	return w3c.Extract(ctx, RecordHeaders{kr})
}

// TraceID returns the trace id of ctx's span, or "".
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
