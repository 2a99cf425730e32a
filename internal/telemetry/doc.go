// Package telemetry owns how vmplane is observed: the OpenTelemetry tracer
// provider (OTLP, stdout or file exporter, configurable sampling, the
// standard OTEL_* variables honoured), the W3C traceparent carried in Kafka
// record headers so that one job is one trace across every role, span names and attributes after the OpenTelemetry
// messaging conventions, the metrics every role reports (a client_golang
// registry with the Go runtime's and the process's collectors, behind a
// small API the call sites keep handles of), consumer lag read with kadm and
// dlq.v1's size, and a slog handler that stamps trace, job and API key ids
// on log lines. ops/deploy's dashboards and alert rules are checked
// against its registry (dashboards_test.go).
//
// telemetry never decides anything and never fails a caller: a missing or
// broken exporter loses spans, not records.
package telemetry
