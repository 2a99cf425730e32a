package schemas

// JobRef identifies the job an event belongs to.
type JobRef struct {
	JobID   string `avro:"job_id" doc:"Job id (equal to the command_id that created it)."`
	VmID    string `avro:"vm_id" doc:"VM of the job; also the record key."`
	Account string `avro:"account" doc:"Account that owns the VM."`
	JobType string `avro:"job_type" doc:"Command name of the job, e.g. Deploy, Stop, HARestart."`
	Origin  string `avro:"origin" doc:"api, work or internal."`
	At      int64  `avro:"at" doc:"When the event happened, Unix milliseconds."`
}

// JobAccepted records that a command became a job (queued or running).
type JobAccepted struct {
	JobRef
	Queued   bool   `avro:"queued" doc:"True when another job runs and this one waits in the VM's queue."`
	Position int32  `avro:"position" doc:"Position in the queue; 0 when it runs at once."`
	Caller   Caller `avro:"caller" doc:"Who asked for the job, from its command: account, API key and request id; account system for what vmplane started itself. Only the acceptance carries it (the job's later events do not), so the VM's state never holds it."`
}

// JobStepped records one step of a job: the journal.
type JobStepped struct {
	JobRef
	Seq       int32  `avro:"seq" doc:"Step number within the job, from 1."`
	TaskState string `avro:"task_state" doc:"Task state entered, e.g. Scheduling, Spawning."`
	Step      string `avro:"step" doc:"Short step name."`
	Text      string `avro:"text" doc:"Human readable description of the step."`
	Obj       string `avro:"obj" doc:"JSON object with the step's details (host, command id, epoch...)."`
}

// JobSucceeded ends a job that reached its goal.
type JobSucceeded struct {
	JobRef
	VmState   string `avro:"vm_state" doc:"Stationary state the VM rests in."`
	StartedAt int64  `avro:"started_at" doc:"When the job started running, Unix milliseconds (after any wait in the VM's queue); at for a job that never ran; 0 from writers before this field."`
}

// JobFailed ends a job that could not reach its goal.
type JobFailed struct {
	JobRef
	Reason    string `avro:"reason" doc:"Why, an error code (schemas/job_codes.go): Timeout, PlacementFailed, AgentError, UnexpectedPowerState, UnexpectedHost, HostDown, ErrorInMaintenance, Internal or Cancelled."`
	Detail    string `avro:"detail" doc:"Free text detail."`
	VmState   string `avro:"vm_state" doc:"Stationary state the VM rests in."`
	StartedAt int64  `avro:"started_at" doc:"When the job started running, Unix milliseconds (after any wait in the VM's queue); at for a job that never ran; 0 from writers before this field."`
}

// JobCancelled ends a job cancelled by a Terminate or a CancelJob (it never
// resumes).
type JobCancelled struct {
	JobRef
	Reason    string `avro:"reason" doc:"Why, e.g. Cancelled by terminate job <id>, Cancelled by key <key id> of account <account>."`
	VmState   string `avro:"vm_state" doc:"Stationary state the VM rests in."`
	StartedAt int64  `avro:"started_at" doc:"When the job started running, Unix milliseconds (after any wait in the VM's queue); at for a job that never ran; 0 from writers before this field."`
	By        string `avro:"by" doc:"Who cancelled: terminate job <id>, or the caller of a CancelJob (key <key id> of account <account>); empty from writers before this field."`
	Step      int32  `avro:"step" doc:"The job's last step number when the cancel took effect (its journal names the step); 0 for a job that never ran."`
	TaskState string `avro:"task_state" doc:"The job's task state when the cancel took effect; empty for a job that never ran."`
	Detail    string `avro:"detail" doc:"What the cancel found: the agent command already sent and what it did (a move that finished cannot be undone), or how the job was rolled back."`
}

// JobRejected ends a command that was not allowed in the VM's state.
type JobRejected struct {
	JobRef
	Reason         string   `avro:"reason" doc:"Why, an error code (schemas/job_codes.go): Invalid, NotFound, AlreadyExists or InvalidState."`
	Detail         string   `avro:"detail" doc:"Free text detail."`
	AllowedActions []string `avro:"allowed_actions" doc:"Actions allowed in the VM's state, lower snake case."`
	Caller         Caller   `avro:"caller" doc:"Who asked for the command, from the command: account, API key and request id (a command rejected from the VM's queue was accepted first, and its JobAccepted says it too)."`
}

// VmStateChanged carries the VM as it is after a change: the read model's row.
type VmStateChanged struct {
	VmID                  string   `avro:"vm_id" doc:"VM; also the record key."`
	Name                  string   `avro:"name" doc:"Display name."`
	Account               string   `avro:"account" doc:"Owning account."`
	ZoneID                string   `avro:"zone_id" doc:"Zone."`
	Offering              Offering `avro:"offering" doc:"Offering the VM runs with."`
	HA                    bool     `avro:"ha" doc:"HA enabled."`
	VmState               string   `avro:"vm_state" doc:"Stationary state."`
	TaskState             string   `avro:"task_state" doc:"Task state of the job in flight; empty for none."`
	PowerState            string   `avro:"power_state" doc:"Last reported power state."`
	PowerHost             string   `avro:"power_host" doc:"Host of the last power report."`
	LegacyState           string   `avro:"legacy_state" doc:"CloudStack state derived from the three axes."`
	HostID                string   `avro:"host_id" doc:"Host the VM is placed on; empty for none."`
	Epoch                 int64    `avro:"epoch" doc:"VM epoch."`
	JobID                 string   `avro:"job_id" doc:"Job in flight or the job that caused the change; empty for none."`
	PendingJobs           int32    `avro:"pending_jobs" doc:"Jobs waiting in the queue."`
	AllowedActions        []string `avro:"allowed_actions" doc:"Actions allowed now, lower snake case."`
	Reason                string   `avro:"reason" doc:"Why the state changed."`
	PowerStateUpdateTime  int64    `avro:"power_state_update_time" doc:"Unix milliseconds of the last power report that agreed or changed."`
	PowerStateUpdateCount int32    `avro:"power_state_update_count" doc:"Consecutive same-state reports."`
	CreatedAt             int64    `avro:"created_at" doc:"Unix milliseconds."`
	UpdatedAt             int64    `avro:"updated_at" doc:"Unix milliseconds."`
}

// PowerStateObserved records a power report that agreed with the VM, for the
// first power.state.update.limit consecutive reports.
type PowerStateObserved struct {
	VmID       string `avro:"vm_id" doc:"VM; also the record key."`
	HostID     string `avro:"host_id" doc:"Reporting host."`
	PowerState string `avro:"power_state" doc:"Reported state."`
	Count      int32  `avro:"count" doc:"Consecutive same-state reports so far."`
	At         int64  `avro:"at" doc:"Unix milliseconds."`
}

// AlertRaised reports something an operator should look at.
type AlertRaised struct {
	AlertID string `avro:"alert_id" doc:"Unique alert id."`
	Kind    string `avro:"kind" doc:"VmStateSync, JobStalled, HAExhausted, HostDisconnected, HostAlert, HostDown, HostFencing, ErrorInMaintenance, HostUnreservable, ..."`
	VmID    string `avro:"vm_id" doc:"VM concerned; empty for none."`
	HostID  string `avro:"host_id" doc:"Host concerned; empty for none."`
	Account string `avro:"account" doc:"Account concerned; empty for none."`
	JobID   string `avro:"job_id" doc:"Job concerned; empty for none."`
	Message string `avro:"message" doc:"What happened."`
	At      int64  `avro:"at" doc:"Unix milliseconds."`
	ZoneID  string `avro:"zone_id" doc:"Zone concerned; empty for none."`
}

// AlertAcknowledged records that someone has seen an alert and taken it
// in hand. The gateway writes it on an operator's request; the alert
// itself is never changed.
type AlertAcknowledged struct {
	AlertID string `avro:"alert_id" doc:"The alert; also the record key."`
	By      string `avro:"by" doc:"Account of the API key that acknowledged it."`
	Account string `avro:"account" doc:"Account of the alert; empty for an operator's alert."`
	At      int64  `avro:"at" doc:"Unix milliseconds."`
	Caller  Caller `avro:"caller" doc:"Who asked: account, API key and request id (the gateway's request)."`
}

// SnapshotTaken records a snapshot the VM's host took and the VM now keeps.
type SnapshotTaken struct {
	VmID    string `avro:"vm_id" doc:"VM; also the record key."`
	Account string `avro:"account" doc:"Owning account."`
	Name    string `avro:"name" doc:"Snapshot name, unique per VM."`
	JobID   string `avro:"job_id" doc:"Snapshot job that took it."`
	At      int64  `avro:"at" doc:"When it was taken, Unix milliseconds."`
}

// SnapshotDeleted records that a VM no longer has a snapshot: a
// DeleteSnapshot job removed it, or the VM's terminate destroyed it with the
// VM's disk.
type SnapshotDeleted struct {
	VmID    string `avro:"vm_id" doc:"VM; also the record key."`
	Account string `avro:"account" doc:"Owning account."`
	Name    string `avro:"name" doc:"Snapshot name."`
	JobID   string `avro:"job_id" doc:"Job that removed it."`
	At      int64  `avro:"at" doc:"Unix milliseconds."`
}

// VmExpunged records that a Deleted VM's record was removed after expunge.delay.
type VmExpunged struct {
	VmID    string `avro:"vm_id" doc:"VM; also the record key."`
	Account string `avro:"account" doc:"Owning account."`
	At      int64  `avro:"at" doc:"Unix milliseconds."`
}
