package api

import "time"

// VmHistoryEvent is one event of GET /v1/vms/{id}/history.
type VmHistoryEvent struct {
	At         time.Time `json:"at"`
	Type       string    `json:"type"`
	JobID      string    `json:"job_id,omitempty"`
	VmState    string    `json:"vm_state,omitempty"`
	TaskState  string    `json:"task_state,omitempty"`
	PowerState string    `json:"power_state,omitempty"`
	HostID     string    `json:"host_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
}

// VmAsOf is GET /v1/vms/{id}/history?at=: the VM as it was at an instant.
type VmAsOf struct {
	At    time.Time `json:"at"`
	Since time.Time `json:"since"`
	VM    VM        `json:"vm"`
	// PendingJob is the job in flight at the instant, if any.
	PendingJob  string `json:"pending_job,omitempty"`
	PendingJobs int32  `json:"pending_jobs"`
	PowerHost   string `json:"power_host,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// JournalLine is one line of a job's journal as ClickHouse keeps it: the
// fields of JobStep plus what the accepted and end lines carry. GET
// /v1/jobs/{id}/journal answers JobSteps while Postgres has the job, and
// JournalLines after.
type JournalLine struct {
	Seq       int32     `json:"seq"`
	Kind      string    `json:"kind"`
	TaskState string    `json:"task_state"`
	Step      string    `json:"step"`
	Text      string    `json:"text"`
	Reason    string    `json:"reason,omitempty"`
	VmState   string    `json:"vm_state,omitempty"`
	HostID    string    `json:"host_id,omitempty"`
	At        time.Time `json:"at"`
}

// QueryRequest is the body of POST /v1/journal/query: an analyst's SQL.
type QueryRequest struct {
	SQL string `json:"sql" required:"true"`
}

// QueryResult is the answer of POST /v1/journal/query.
type QueryResult struct {
	Columns   []string   `json:"columns"`
	Rows      [][]string `json:"rows"`
	Truncated bool       `json:"truncated"`
}
