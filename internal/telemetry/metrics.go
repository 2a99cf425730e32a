package telemetry

import (
	"errors"

	"github.com/vmplane/vmplane/schemas"
)

// The metrics every role reports, in Default. Names follow Prometheus
// conventions: base units (seconds), _total for counters.
var (
	latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	jobBuckets     = []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	sizeBuckets    = []float64{1, 10, 50, 100, 500, 1000, 5000, 10000, 50000}

	RecordsProcessed = Default.Counter("vmplane_records_processed_total",
		"Records consumed and applied, per consumer and topic.", "consumer", "topic")
	RecordsFailed = Default.Counter("vmplane_records_failed_total",
		"Records that could not be processed and went to dlq.v1, per consumer and topic.", "consumer", "topic")
	RecordsMisrouted = Default.Counter("vmplane_records_misrouted_total",
		"Keyed records on a partition their key does not hash to (Kafka's murmur2), sent to dlq.v1, per consumer and topic.", "consumer", "topic")
	CommitSeconds = Default.Histogram("vmplane_transaction_commit_seconds",
		"Latency of ending a processor's Kafka transaction (produce flush and offset commit).", latencyBuckets, "processor")
	TransactionsAborted = Default.Counter("vmplane_transactions_aborted_total",
		"Processor transactions that did not commit.", "processor")
	StateKeys = Default.Gauge("vmplane_processor_state_keys",
		"Keys held in a processor's state (VMs, hosts, zones of its partitions).", "processor")
	JobsInFlight = Default.Gauge("vmplane_jobs_in_flight",
		"Jobs accepted and not ended, per job type, as seen by this VM processor's partitions.", "type")
	JobSeconds = Default.Histogram("vmplane_job_duration_seconds",
		"Job durations from acceptance to end, per job type and result.", jobBuckets, "type", "result")
	PowerReportsSuppressed = Default.Counter("vmplane_power_reports_suppressed_total",
		"Power reports that agreed with the VM past power.state.update.limit and cost no event.")
	ProjectorApplySeconds = Default.Histogram("vmplane_projector_apply_seconds",
		"Latency of applying one batch to a store, retries included.", latencyBuckets, "projector")
	ProjectorBatchRecords = Default.Histogram("vmplane_projector_batch_records",
		"Records per applied projector batch.", sizeBuckets, "projector")
	ClickHouseBatchRows = Default.Histogram("vmplane_clickhouse_batch_rows",
		"Rows per ClickHouse insert, per table.", sizeBuckets, "table")
	HTTPRequests = Default.Counter("vmplane_http_requests_total",
		"HTTP requests by route, method and status code.", "route", "method", "code")
	HTTPSeconds = Default.Histogram("vmplane_http_request_seconds",
		"HTTP request latency by route.", latencyBuckets, "route", "method")
	AgentCommands = Default.Counter("vmplane_agent_commands_total",
		"Agent commands executed, by command type and result.", "type", "result")
)

// DeadLettered counts a record a consumer sent to dlq.v1 for err, and as
// misrouted when err is a *schemas.MisroutedError.
func DeadLettered(consumer, topic string, err error) {
	RecordsFailed.With(consumer, topic).Inc()
	var m *schemas.MisroutedError
	if errors.As(err, &m) {
		RecordsMisrouted.With(consumer, topic).Inc()
	}
}
