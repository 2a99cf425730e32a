package api

import "time"

// Job is the JSON of a job: the answer to every request that issues a VM
// command, pending until the processor has seen it.
type Job struct {
	ID             string     `json:"id"`
	VmID           string     `json:"vm_id"`
	Type           string     `json:"type"`
	State          string     `json:"state"`
	Reason         string     `json:"reason"`
	Detail         string     `json:"detail,omitempty"`
	TaskState      string     `json:"task_state"`
	Origin         string     `json:"origin,omitempty"`
	AllowedActions []string   `json:"allowed_actions,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	Steps          []JobStep  `json:"steps,omitempty"`
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
