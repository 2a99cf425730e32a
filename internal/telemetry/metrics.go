package telemetry

import (
	"errors"

	"github.com/vmplane/vmplane/schemas"
)

// The metrics every role reports, in Default. Names follow Prometheus
// conventions: base units (seconds, bytes), _total for counters. Every
// family vmplane reports is declared here, so that Default.Names() is the
// list the dashboards and alert rules are checked against; the Prepare
// functions create the series a role knows it will report, at 0, so that
// a fresh /metrics lacks no family and rate() has a start.
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
	TimersHeld = Default.Gauge("vmplane_processor_partitions_held",
		"Partitions restored whose timers wait until their inputs are read to where they stood at the assignment.", "processor")
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
		"HTTP request latency by route; event streams and long-polls (GET /v1/jobs/{id}?wait=) are left out, since they last as long as the client wants.",
		latencyBuckets, "route", "method")
	HTTPStreams = Default.Gauge("vmplane_http_streams_open",
		"Event streams (Server-Sent Events) open, by route.", "route")
	AgentCommands = Default.Counter("vmplane_agent_commands_total",
		"Agent commands executed, by command type and result.", "type", "result")

	// The inventory, read from the read model by the gateway every
	// InventoryEvery: what exists, not what happens.
	VMs = Default.Gauge("vmplane_vms",
		"VMs in the read model by vm_state (expunged VMs are gone).", "state")
	Hosts = Default.Gauge("vmplane_hosts",
		"Hosts in the read model by agent status (Up, Down, Disconnected, Alert, ...; Removed ones included).", "status")
	ZoneFreeCPU = Default.Gauge("vmplane_zone_free_cpu",
		"Free vCPUs on the reservable hosts of a zone, over-commit applied (what GET /v1/zones/{id}/capacity sums).", "zone")
	ZoneFreeMemory = Default.Gauge("vmplane_zone_free_memory_bytes",
		"Free memory on the reservable hosts of a zone, over-commit applied.", "zone")
	InventoryReadSeconds = Default.Gauge("vmplane_inventory_read_timestamp_seconds",
		"When the inventory gauges were last read from the read model (Unix time); a stale one means they are old.")
)

// The families of gauges read at scrape time, registered here without a
// source so that they are known to Default.Names(); RegisterLag and
// RegisterDeadLetters give them one.
const (
	lagName         = "kafka_consumergroup_lag"
	deadLettersName = "vmplane_dead_letters"
)

var (
	lagLabels = []string{"consumergroup", "topic", "partition"}
	lagHelp   = "Records a consumer group has yet to process, per group, topic and partition (end offset minus the group's position)."
	dlqHelp   = "Offsets taken in dlq.v1 (end minus start, over its partitions): every dead letter, plus the commit marker of each transaction that wrote one, so an upper bound of the dead letters kept; alert on its increase."
)

func init() {
	Default.GaugeFunc(lagName, lagHelp, lagLabels, nil)
	Default.GaugeFunc(deadLettersName, dlqHelp, nil, nil)
}

// Job results, the label values of vmplane_job_duration_seconds.
var jobResults = []string{"succeeded", "failed", "cancelled", "rejected"}

// PrepareConsumer creates the record counters of consumer for each of its
// topics, and its retrying gauge, at 0.
func PrepareConsumer(consumer string, topics ...string) {
	for _, t := range topics {
		RecordsProcessed.With(consumer, t)
		RecordsFailed.With(consumer, t)
		RecordsMisrouted.With(consumer, t)
	}
	RetryingSeconds.With(consumer)
}

// PrepareProcessor creates a processor's transaction series at 0.
func PrepareProcessor(name string) {
	CommitSeconds.With(name)
	TransactionsAborted.With(name)
	StateKeys.With(name)
	TimersHeld.With(name)
}

// PrepareJobs creates the job series of the VM processor at 0: the job
// types of vm.commands.v1 (a command is a job of its name) and extra (the
// jobs the processor starts itself, HARestart), by result. CancelJob ends
// another job and is none itself.
func PrepareJobs(extra ...string) {
	spec, _ := schemas.TopicByName(schemas.TopicVmCommands)
	for _, t := range append(spec.Types, extra...) {
		if t == "CancelJob" {
			continue
		}
		JobsInFlight.With(t)
		for _, r := range jobResults {
			JobSeconds.With(t, r)
		}
	}
	PowerReportsSuppressed.With()
}

// PrepareProjector creates a projector's batch series at 0, and the
// ClickHouse rows of tables when it writes there.
func PrepareProjector(name string, tables ...string) {
	ProjectorApplySeconds.With(name)
	ProjectorBatchRecords.With(name)
	for _, t := range tables {
		ClickHouseBatchRows.With(t)
	}
}

// PrepareAgent creates the agent's command counters at 0: every agent
// command type, ok or error.
func PrepareAgent() {
	spec, _ := schemas.TopicByName(schemas.TopicAgentCommands)
	for _, t := range spec.Types {
		AgentCommands.With(t, "ok")
		AgentCommands.With(t, "error")
	}
	AgentCommands.With("undecodable", "skipped")
}

// DeadLettered counts a record a consumer sent to dlq.v1 for err, and as
// misrouted when err is a *schemas.MisroutedError.
func DeadLettered(consumer, topic string, err error) {
	RecordsFailed.With(consumer, topic).Inc()
	var m *schemas.MisroutedError
	if errors.As(err, &m) {
		RecordsMisrouted.With(consumer, topic).Inc()
	}
}
