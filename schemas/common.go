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

// Caller says who caused a command: the account and API key of the
// request that asked for it and the gateway's id of that request
// (X-Request-Id, which its log lines carry), so that an audit can go from
// a job to the request and back. What vmplane starts itself carries the
// caller of the request behind it where there is one (a host's
// maintenance migrations carry the admin's PrepareForMaintenance), and
// otherwise Account "system" with no key or request (SystemCaller). All
// empty in records written before the field.
type Caller struct {
	Account   string `avro:"account" doc:"Account of the API key that asked (an admin acting on a user's VM names the admin's account); system for what vmplane started itself; empty from writers before this field."`
	KeyID     string `avro:"key_id" doc:"Id of the API key that asked; empty for system."`
	RequestID string `avro:"request_id" doc:"The gateway's id of the HTTP request (X-Request-Id); empty for system."`
}

// CallerSystem is the account of what vmplane starts itself (HA restarts,
// lease ends and healing) with no request behind it.
const CallerSystem = "system"

// SystemCaller is the Caller of what vmplane starts itself.
func SystemCaller() Caller { return Caller{Account: CallerSystem} }

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
