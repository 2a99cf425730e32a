package schemas

import "math"

// The over-commit ratios placement applies to a host whose HostStatus
// reports none (a ratio of 0): CloudStack's cluster defaults for CPU and
// memory (docs/design.md §13). The capacity read model shows capacity with the
// same ratios.
const (
	DefaultCPUOvercommit = 4.0
	DefaultMemOvercommit = 1.0
)

// Overcommitted is what n physical CPUs (or MiB) may hand out at an
// over-commit ratio, placement's limit on a host; a ratio of 0 or less
// counts as 1. The small epsilon keeps 4 × 2.5 from flooring to 9 through
// float rounding.
func Overcommitted(n int64, ratio float64) int64 {
	if ratio <= 0 {
		ratio = 1
	}
	return int64(math.Floor(float64(n)*ratio + 1e-9))
}

// HostStatus is the latest status of a host, on the compacted host.status.v1
// (key host_id) and, keyed by zone, on placement.requests.v1 and
// lease.commands.v1 so the zone owners see their hosts in order.
type HostStatus struct {
	HostID        string            `avro:"host_id" doc:"Host id."`
	Name          string            `avro:"name" doc:"Host name."`
	ZoneID        string            `avro:"zone_id" doc:"Zone."`
	PodID         string            `avro:"pod_id" doc:"Pod."`
	ClusterID     string            `avro:"cluster_id" doc:"Cluster."`
	Hypervisor    string            `avro:"hypervisor" doc:"sim or qemu."`
	Status        string            `avro:"status" doc:"Agent status: Creating, Connecting, Up, Down, Disconnected, Alert, Removed, Error, Rebalancing."`
	ResourceState string            `avro:"resource_state" doc:"Admin intent: Creating, Enabled, Disabled, PrepareForMaintenance, ErrorInMaintenance, Maintenance, Error, Unmanaged."`
	Reservable    bool              `avro:"reservable" doc:"status == Up and resource_state == Enabled."`
	CPU           int32             `avro:"cpu" doc:"Physical CPUs."`
	MemoryMB      int64             `avro:"memory_mb" doc:"Memory, MiB."`
	CPUOvercommit float64           `avro:"cpu_overcommit" doc:"CPU over-commit ratio."`
	MemOvercommit float64           `avro:"mem_overcommit" doc:"Memory over-commit ratio."`
	Tags          []string          `avro:"tags" doc:"Host tags."`
	Properties    map[string]string `avro:"properties" doc:"Host properties."`
	LastPingAt    int64             `avro:"last_ping_at" doc:"Unix milliseconds of the last ping."`
	Reason        string            `avro:"reason" doc:"Why the status last changed."`
	UpdatedAt     int64             `avro:"updated_at" doc:"Unix milliseconds."`
}

// HostRecord is the host processor's state of one host (changelog host.state.v1).
type HostRecord struct {
	Status        HostStatus       `avro:"status" doc:"Current status as published."`
	AgentID       string           `avro:"agent_id" doc:"Agent serving the host."`
	LastReportSeq int64            `avro:"last_report_seq" doc:"Last report sequence."`
	VmLastSeen    map[string]int64 `avro:"vm_last_seen" doc:"VM id to when the host last listed it, Unix milliseconds."`
	MissingSent   []string         `avro:"missing_sent" doc:"VMs for which VmMissingFromHost was sent since they were last listed."`
	PingDeadline  int64            `avro:"ping_deadline" doc:"When a missing ping starts an investigation, Unix milliseconds."`
	GraceUntil    int64            `avro:"grace_until" doc:"Restart grace end, Unix milliseconds."`
	Investigation string           `avro:"investigation" doc:"Investigator in progress; empty for none."`
	AlertAt       int64            `avro:"alert_at" doc:"When an unresolved investigation becomes Alert, Unix milliseconds."`
	Round         int64            `avro:"round" doc:"Investigation round, minting the investigators' command ids."`
	StepDeadline  int64            `avro:"step_deadline" doc:"When the investigator in progress counts as Unknown, Unix milliseconds."`
	Maintenance   int64            `avro:"maintenance" doc:"PrepareForMaintenance round, minting the Migrate command ids."`
	Draining      []string         `avro:"draining" doc:"VMs whose maintenance Migrate job has not ended."`
	DrainFailed   []string         `avro:"drain_failed" doc:"VMs whose maintenance Migrate job failed."`
	DrainJob      string           `avro:"drain_job" doc:"Job id of the maintenance in progress (its PrepareForMaintenance command id); empty for none."`
	DrainJobs     []string         `avro:"drain_jobs" doc:"Ids of the last PrepareForMaintenance commands the host took or refused: a repeat of one is not a new job."`
	DrainTotal    int32            `avro:"drain_total" doc:"How many VMs the maintenance in progress drains."`
}
