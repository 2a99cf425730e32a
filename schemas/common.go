package schemas

// Record is one Kafka record as the deciding code sees it: the topic, the key
// and the decoded value (a pointer to one of this package's types). The
// processors' pure Step functions take and return Records; only the runtime
// turns them into bytes.
type Record struct {
	Topic string
	Key   string
	Value any
	// Headers carries the headers other than `type` (set from Value):
	// traceparent and command_id travel here.
	Headers map[string]string
	// Partition and Offset locate a consumed record; zero on outputs.
	Partition int32
	Offset    int64
	// TimestampMs is the record's Kafka timestamp (consumed records only).
	TimestampMs int64
}

// Origin says who started a job: "api" (the gateway), "work" (the per-VM job
// that carries it out) or "internal" (HA restart, out-of-band follow,
// maintenance, lease healing).
const (
	OriginAPI      = "api"
	OriginWork     = "work"
	OriginInternal = "internal"
)

// Offering is a service offering as embedded in the commands that use it, so
// that a later change of the catalog never changes a placed VM.
type Offering struct {
	ID                string   `avro:"id" doc:"Offering id."`
	Name              string   `avro:"name" doc:"Offering name, e.g. small."`
	CPU               int32    `avro:"cpu" doc:"Virtual CPUs."`
	MemoryMB          int64    `avro:"memory_mb" doc:"Memory in MiB."`
	HA                bool     `avro:"ha" doc:"Whether VMs of this offering are restarted elsewhere when their host fails."`
	DeploymentPlanner string   `avro:"deployment_planner" doc:"Planner name; empty means the global vm.deployment.planner."`
	HostTags          []string `avro:"host_tags" doc:"Tags a host must carry to run VMs of this offering."`
	PlannerMode       string   `avro:"planner_mode" doc:"Mode of the planner: Strict or Preferred (ImplicitDedicationPlanner); empty is Strict."`
}
