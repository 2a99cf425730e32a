package schemas

// AgentConnected is an agent's hello for one host, with what the host offers.
type AgentConnected struct {
	HostID     string            `avro:"host_id" doc:"Host id; also the record key."`
	Name       string            `avro:"name" doc:"Host name."`
	AgentID    string            `avro:"agent_id" doc:"Agent process serving the host."`
	ZoneID     string            `avro:"zone_id" doc:"Zone."`
	PodID      string            `avro:"pod_id" doc:"Pod."`
	ClusterID  string            `avro:"cluster_id" doc:"Cluster."`
	Hypervisor string            `avro:"hypervisor" doc:"sim or qemu."`
	CPU        int32             `avro:"cpu" doc:"Physical CPUs offered."`
	MemoryMB   int64             `avro:"memory_mb" doc:"Memory offered, MiB."`
	Tags       []string          `avro:"tags" doc:"Host tags."`
	Properties map[string]string `avro:"properties" doc:"Free host properties (for lease host selection)."`
	VmIDs      []string          `avro:"vm_ids" doc:"VMs the host runs right now."`
	At         int64             `avro:"at" doc:"Unix milliseconds."`
}

// AgentPing is an agent's periodic heartbeat for one host.
type AgentPing struct {
	HostID    string   `avro:"host_id" doc:"Host id; also the record key."`
	ReportSeq int64    `avro:"report_seq" doc:"Per-host report sequence of the report round this ping closes."`
	VmIDs     []string `avro:"vm_ids" doc:"VMs the host runs."`
	At        int64    `avro:"at" doc:"Unix milliseconds."`
}

// AgentDisconnected says an agent stopped serving a host in an orderly way.
type AgentDisconnected struct {
	HostID string `avro:"host_id" doc:"Host id; also the record key."`
	Reason string `avro:"reason" doc:"Why."`
	At     int64  `avro:"at" doc:"Unix milliseconds."`
}

// CheckHostAnswer is an agent's answer to CheckHost.
type CheckHostAnswer struct {
	CommandID    string `avro:"command_id" doc:"The CheckHost answered."`
	HostID       string `avro:"host_id" doc:"Host of the asked agent."`
	TargetHostID string `avro:"target_host_id" doc:"Host checked; also the record key."`
	Result       string `avro:"result" doc:"Up, Down or Unknown."`
	Detail       string `avro:"detail" doc:"What the checker saw, for people."`
	At           int64  `avro:"at" doc:"Unix milliseconds."`
}

// MaintenanceMigrationEnded tells a host in PrepareForMaintenance that one of
// the Migrate jobs draining it ended. The host relay forwards it from the
// job's end on vm.events.v1 (keyed by VM) to host.events.v1 (keyed by host),
// so the host processor can join its fan-out.
type MaintenanceMigrationEnded struct {
	HostID string `avro:"host_id" doc:"Host being drained; also the record key."`
	VmID   string `avro:"vm_id" doc:"VM migrated."`
	JobID  string `avro:"job_id" doc:"The Migrate job (its command id, minted by the host processor)."`
	OK     bool   `avro:"ok" doc:"The job succeeded."`
	Reason string `avro:"reason" doc:"Why it failed; empty on success."`
	At     int64  `avro:"at" doc:"Unix milliseconds of the job's end."`
}
