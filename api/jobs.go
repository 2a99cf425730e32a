package api

import "time"

// Job is the JSON of a job: the answer to every request that issues a VM
// command, pending until the processor has seen it.
type Job struct {
	ID     string `json:"id"`
	VmID   string `json:"vm_id"`
	Type   string `json:"type"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	// ErrorCode is the stable code of a failed, cancelled or rejected
	// job's end, beside its message (reason and detail): one of the
	// codes of docs/design.md §5.3, for grouping.
	ErrorCode string `json:"error_code,omitempty"`
	// Caller is who asked for the job; absent for jobs of records from
	// before vmplane recorded it.
	Caller         *JobCaller `json:"caller,omitempty"`
	TaskState      string     `json:"task_state"`
	Origin         string     `json:"origin,omitempty"`
	AllowedActions []string   `json:"allowed_actions,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	Steps          []JobStep  `json:"steps,omitempty"`
	// Progress is how far a job that measures it is (a host's maintenance,
	// a lease's end: its child jobs ended; a deploy: its steps); absent
	// for the others.
	Progress *Progress `json:"progress,omitempty"`
	// Children are the jobs a bulk job fanned out and joins.
	Children []JobChild `json:"children,omitempty"`
}

// JobCaller is who asked for a job: the account and API key of the
// request and the request's id (its X-Request-Id). Account "system" with
// no key is vmplane itself (an HA restart, a lease's end); a host's
// maintenance migrations name the admin who asked for the maintenance.
type JobCaller struct {
	Account   string `json:"account"`
	KeyID     string `json:"key_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// Progress is a job's progress after its last step: done of total parts.
type Progress struct {
	Done    int `json:"done"`
	Total   int `json:"total"`
	Percent int `json:"percent"`
}

// JobChild is one job of a bulk job's fan-out: pending until the read
// model has it.
type JobChild struct {
	ID    string `json:"id"`
	VmID  string `json:"vm_id,omitempty"`
	Type  string `json:"type,omitempty"`
	State string `json:"state"`
}

// JobStep is one step of a job's journal.
type JobStep struct {
	Seq       int32     `json:"seq"`
	TaskState string    `json:"task_state"`
	Step      string    `json:"step"`
	Text      string    `json:"text"`
	At        time.Time `json:"at"`
}

// Job states.
const (
	JobPending   = "pending"
	JobRunning   = "running"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
	JobRejected  = "rejected"
)

// Finished says whether a job state is final.
func Finished(state string) bool {
	switch state {
	case JobSucceeded, JobFailed, JobCancelled, JobRejected:
		return true
	}
	return false
}

// CancelRequest is the optional body of POST /v1/jobs/{id}/cancel.
type CancelRequest struct {
	// Reason is why, as the caller says; the job's end detail quotes it.
	Reason string `json:"reason,omitempty"`
}
