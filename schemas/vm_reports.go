package schemas

// Power states as the hypervisor reports them.
const (
	PowerOn      = "PowerOn"
	PowerOff     = "PowerOff"
	PowerPaused  = "Paused"
	PowerSusp    = "Suspended"
	PowerUnknown = "PowerUnknown"
)

// PowerReport is an agent's raw report of one VM's power state, sent every
// ping interval and at once on every change. Agents know nothing of jobs.
type PowerReport struct {
	VmID       string `avro:"vm_id" doc:"VM the report is about; also the record key."`
	HostID     string `avro:"host_id" doc:"Host the VM was seen on."`
	PowerState string `avro:"power_state" doc:"PowerOn, PowerOff, Paused, Suspended or PowerUnknown."`
	ReportSeq  int64  `avro:"report_seq" doc:"Per-host report sequence; a report with a sequence not newer than the last seen from that host is stale."`
	ReportedAt int64  `avro:"reported_at" doc:"When the agent observed the state, Unix milliseconds."`
}

// AgentAnswer is an agent's answer to one agent command about a VM.
type AgentAnswer struct {
	CommandID   string `avro:"command_id" doc:"The agent command answered."`
	VmID        string `avro:"vm_id" doc:"VM the command was about; also the record key."`
	HostID      string `avro:"host_id" doc:"Host whose agent answers."`
	Epoch       int64  `avro:"epoch" doc:"The VM epoch the command carried; answers of an older epoch are stale."`
	CommandType string `avro:"command_type" doc:"Record name of the command answered, e.g. StartVm."`
	OK          bool   `avro:"ok" doc:"Whether the command succeeded."`
	Error       string `avro:"error" doc:"Why it failed; empty on success."`
	PowerState  string `avro:"power_state" doc:"Power state after the command, as the agent saw it."`
	AnsweredAt  int64  `avro:"answered_at" doc:"Unix milliseconds."`
	PowerHost   string `avro:"power_host" doc:"Host power_state was read on: the destination of a migration, else host_id; empty from agents before this field."`
	ReportSeq   int64  `avro:"report_seq" doc:"The report sequence of power_host under which power_state was read: a report of that host with a lower sequence is older than this answer. 0 from agents before this field."`
}
