package schemas

// VmRecord is the VM processor's state of one VM, written to the compacted
// changelog vm.state.v1 after every change and read back on assignment.
//
// The processor keeps one per VM in memory (500,000 in the storm of bench
// -only storm), so what most VMs leave zero is out of line: Job, Storage
// and the fields of Rare are nil while zero (no job in flight, no volume
// or NIC; no task, queue, HA episode, twin, resize, snapshot or deletion),
// with the same schema and bytes on the wire (see doc.go and avro.go). An
// idle VM's record takes 384 bytes, all of its size class (stale_ignored
// is here, not in Rare, for the stale report's path to copy one object);
// 8 bytes more would cost 32 per VM (TestIdleVmStaysSmall). The Go order of the fields
// here is their order on the wire, so a field is added where its padding
// costs least. The strings tagged intern are shared by every record that
// holds the same value (intern.go): an idle VM keeps copies of its id and
// name only. A one-entry report_seq is shared alike: never write into it.
type VmRecord struct {
	VmID                  string           `avro:"vm_id" doc:"VM id; also the record key."`
	Name                  string           `avro:"name" doc:"Display name."`
	Account               string           `avro:"account" doc:"Owning account." intern:"true"`
	ZoneID                string           `avro:"zone_id" doc:"Zone." intern:"true"`
	Offering              Offering         `avro:"offering" doc:"Current offering."`
	HA                    bool             `avro:"ha" doc:"HA enabled."`
	VmState               string           `avro:"vm_state" doc:"Stationary state." intern:"true"`
	PowerState            string           `avro:"power_state" doc:"Last reported power state." intern:"true"`
	PowerHost             string           `avro:"power_host" doc:"Host of the last power report." intern:"true"`
	PowerStateUpdateTime  int64            `avro:"power_state_update_time" doc:"Unix milliseconds."`
	PowerStateUpdateCount int32            `avro:"power_state_update_count" doc:"Consecutive same-state reports."`
	HARetries             int32            `avro:"ha_retries" doc:"HA restarts tried since the VM was last Active."`
	HostID                string           `avro:"host_id" doc:"Placed host." intern:"true"`
	PodID                 string           `avro:"pod_id" doc:"Pod of the placed host." intern:"true"`
	ClusterID             string           `avro:"cluster_id" doc:"Cluster of the placed host." intern:"true"`
	Epoch                 int64            `avro:"epoch" doc:"Incremented per job; carried by every agent command."`
	Job                   *JobState        `avro:"job" doc:"Job in flight; job_id empty for none."`
	Recent                []RecentJob      `avro:"recent" doc:"Latest finished jobs, for command_id dedup."`
	ReportSeq             map[string]int64 `avro:"report_seq" doc:"Last report sequence seen per host." intern:"true"`
	CreatedAt             int64            `avro:"created_at" doc:"Unix milliseconds."`
	UpdatedAt             int64            `avro:"updated_at" doc:"Unix milliseconds."`
	StaleIgnored          int64            `avro:"stale_ignored" doc:"Answers, reports and placement decisions ignored as stale (older epoch or report sequence)."`
	Storage               *VmStorage       `avro:"storage" doc:"The VM's template, volumes and NICs; empty for a VM with none."`
	// Rare holds the fields an idle VM leaves zero; nil when all are.
	Rare *VmRare `avro:",inline"`
}

// VmRare is the part of a VmRecord that most VMs leave zero, out of line
// behind VmRecord.Rare. Its fields are VmRecord's on the wire, each after
// the field its tag names.
type VmRare struct {
	OldOffering      *Offering       `avro:"old_offering" after:"offering" doc:"Offering before a resize awaiting confirmation."`
	AffinityGroup    string          `avro:"affinity_group" after:"ha" doc:"Affinity group." intern:"true"`
	TaskState        string          `avro:"task_state" after:"vm_state" doc:"Task state of the job in flight." intern:"true"`
	Queue            []QueuedCommand `avro:"queue" after:"job" doc:"Commands waiting for the job in flight to end (FIFO)."`
	DeletedAt        int64           `avro:"deleted_at" after:"updated_at" doc:"When the VM reached Deleted, Unix milliseconds; 0 otherwise."`
	ExpungeAt        int64           `avro:"expunge_at" after:"deleted_at" doc:"When the Deleted VM is expunged, Unix milliseconds; 0 for never."`
	ResizeSourceHost string          `avro:"resize_source_host" after:"stale_ignored" doc:"Host a Resized VM left (its old allocation is kept there until confirm); empty when resized in place." intern:"true"`
	HARetryAt        int64           `avro:"ha_retry_at" after:"resize_source_host" doc:"When the next HA restart is due, Unix milliseconds; 0 for none."`
	HAAvoidHosts     []string        `avro:"ha_avoid_hosts" after:"ha_retry_at" doc:"Hosts the HA restarts of this episode avoid: the host that went down and destinations where an attempt failed." intern:"true"`
	Twin             *TwinReport     `avro:"twin" after:"ha_avoid_hosts" doc:"Another host reporting the VM on it while the VM's own host last said it runs there; empty for none."`
	ReportsAfter     int64           `avro:"reports_after" after:"twin" doc:"Power reports taken before this time (Unix milliseconds) are stale: an agent command of a job that ended without its answer may have acted until then. 0 for none."`
	MaybeOn          []string        `avro:"maybe_on" after:"reports_after" doc:"Hosts besides host_id that keep a claim for the VM because it may be there: a migration or a terminate ended without learning whether the VM moved. Each is asked with CheckVm until its agent answers; a Terminate destroys the VM there too." intern:"true"`
	CheckAt          int64           `avro:"check_at" after:"maybe_on" doc:"When the next round of CheckVm is due, Unix milliseconds; 0 for none."`
	HAAwaitsCheck    bool            `avro:"ha_awaits_check" after:"check_at" doc:"An HA restart waits for the VM's host to confirm with CheckVm that the VM is off: a report found it off, and the host may have started it again since."`
	Snapshots        *SnapshotList   `avro:"snapshots" after:"ha_awaits_check" doc:"The VM's snapshots: those its host took and no job has deleted since; empty for none."`
}

// StateKey is the record's key on vm.state.v1, its vm_id.
func (r *VmRecord) StateKey() string { return r.VmID }

// RareFields returns the rarely set fields of r, zero when none is set: for
// reading them where r.Rare may be nil.
func (r *VmRecord) RareFields() VmRare {
	if r.Rare == nil {
		return VmRare{}
	}
	return *r.Rare
}

// SnapshotList is a VM's snapshots, out of line in VmRecord as Job and Twin
// are: most VMs have none, and a nil pointer costs 8 bytes where an empty
// slice would cost 24.
type SnapshotList struct {
	Items []VmSnapshot `avro:"items" doc:"The snapshots, oldest first."`
}

// VmSnapshot is one snapshot of a VM's disk. The host keeps the data; the
// record keeps the name and time only.
type VmSnapshot struct {
	Name    string `avro:"name" doc:"Snapshot name, unique per VM."`
	TakenAt int64  `avro:"taken_at" doc:"Unix milliseconds."`
}

// TwinReport is a report of a VM on a host other than its own while its own
// host's last report has it there too: a move seen from its far end, or a
// second copy. The own host's next report settles which.
type TwinReport struct {
	HostID     string `avro:"host_id" doc:"The other host."`
	PowerState string `avro:"power_state" doc:"What the other host reported."`
	OwnSeq     int64  `avro:"own_seq" doc:"The own host's last report sequence when the other host reported: only a later report of the own host settles it."`
}

// JobState is the job in flight of a VM: what it waits for and until when.
type JobState struct {
	JobID      string            `avro:"job_id" doc:"Job id; empty when no job runs."`
	JobType    string            `avro:"job_type" doc:"Command name."`
	Origin     string            `avro:"origin" doc:"api, work or internal."`
	Account    string            `avro:"account" doc:"Account that asked."`
	Phase      string            `avro:"phase" doc:"Flow-specific phase of the job."`
	Seq        int32             `avro:"seq" doc:"Last step number emitted."`
	StartedAt  int64             `avro:"started_at" doc:"Unix milliseconds."`
	Deadline   int64             `avro:"deadline" doc:"Job timeout, Unix milliseconds."`
	LastStepAt int64             `avro:"last_step_at" doc:"Unix milliseconds of the last step (stall detection)."`
	StallAlert bool              `avro:"stall_alert" doc:"Whether JobStalled was raised."`
	Wait       JobWait           `avro:"wait" doc:"What the job waits for."`
	Params     map[string]string `avro:"params" doc:"Command parameters (force, host_id, ...)."`
	NextWake   int64             `avro:"next_wake" doc:"Next periodic wake-up, Unix milliseconds."`
}

// JobWait is a join: the record that wakes the job, with a deadline.
type JobWait struct {
	Kind      string `avro:"kind" doc:"Placement, Answer, Power or empty."`
	RequestID string `avro:"request_id" doc:"Placement request or agent command id waited on."`
	HostID    string `avro:"host_id" doc:"Host expected to answer or report."`
	Power     string `avro:"power" doc:"Power state expected."`
	Answered  bool   `avro:"answered" doc:"The agent answered ok (for waits that need answer and report)."`
	Reported  bool   `avro:"reported" doc:"The expected power report arrived."`
	Deadline  int64  `avro:"deadline" doc:"Unix milliseconds."`
}

// QueuedCommand is a VM command waiting in the VM's queue, kept encoded.
type QueuedCommand struct {
	Type      string `avro:"type" doc:"Record name of the command."`
	CommandID string `avro:"command_id" doc:"Its command id."`
	Payload   []byte `avro:"payload" doc:"The command, Avro single-object encoded."`
}

// RecentJob remembers a finished job's outcome for duplicate command ids.
type RecentJob struct {
	JobID string `avro:"job_id" doc:"Job id."`
	State string `avro:"state" doc:"succeeded, failed, cancelled or rejected."`
}
