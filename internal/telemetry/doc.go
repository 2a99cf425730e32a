// Package telemetry owns how vmplane is observed: the OpenTelemetry tracer
// provider (OTLP, stdout or file exporter, configurable sampling), the W3C
// traceparent carried in Kafka record headers so that one job is one trace
// across every role, span names and attributes after the OpenTelemetry
// messaging conventions, a small Prometheus text-format metrics registry
// with the metrics every role reports, consumer lag read with kadm, and a
// slog handler that stamps trace and job ids on log lines.
//
// telemetry never decides anything and never fails a caller: a missing or
// broken exporter loses spans, not records.
package telemetry
