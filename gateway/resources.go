package gateway

import (
	"time"

	"github.com/vmplane/vmplane/readmodel"
)

// The JSON resources of DESIGN §10. Field names are fixed by the design;
// fields beyond them are additions, never renames.

// VM is the JSON of a VM.
type VM struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Account        string    `json:"account"`
	Offering       string    `json:"offering"`
	VmState        string    `json:"vm_state"`
	TaskState      string    `json:"task_state"`
	PowerState     string    `json:"power_state"`
	LegacyState    string    `json:"legacy_state"`
	HostID         string    `json:"host_id"`
	AllowedActions []string  `json:"allowed_actions"`
	HA             bool      `json:"ha"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	CPU            int32     `json:"cpu"`
	MemoryMB       int64     `json:"memory_mb"`
	ZoneID         string    `json:"zone_id"`
	Epoch          int64     `json:"epoch"`
	JobID          string    `json:"job_id,omitempty"`
}

// Job is the JSON of a job.
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

// Offering is the JSON of a service offering.
type Offering struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	CPU               int32    `json:"cpu"`
	MemoryMB          int64    `json:"memory_mb"`
	HA                bool     `json:"ha"`
	DeploymentPlanner string   `json:"deployment_planner"`
	PlannerMode       string   `json:"planner_mode,omitempty"`
	HostTags          []string `json:"host_tags"`
}

// List is one page of a list: Next is the cursor of the following page,
// empty on the last.
type List[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func vmJSON(v readmodel.VM) VM {
	return VM{
		ID: v.ID, Name: v.Name, Account: v.Account, Offering: v.Offering,
		VmState: v.VmState, TaskState: v.TaskState, PowerState: v.PowerState, LegacyState: v.LegacyState,
		HostID: v.HostID, AllowedActions: nonNil(v.AllowedActions), HA: v.HA,
		CreatedAt: v.CreatedAt.UTC(), UpdatedAt: v.UpdatedAt.UTC(),
		CPU: v.CPU, MemoryMB: v.MemoryMB, ZoneID: v.ZoneID, Epoch: v.Epoch, JobID: v.JobID,
	}
}

func jobJSON(j readmodel.Job) Job {
	out := Job{
		ID: j.ID, VmID: j.VmID, Type: j.Type, State: j.State, Reason: j.Reason, Detail: j.Detail,
		TaskState: j.TaskState, Origin: j.Origin, AllowedActions: j.AllowedActions,
		CreatedAt: j.CreatedAt.UTC(),
	}
	if j.FinishedAt != nil {
		t := j.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	return out
}

func stepJSON(s readmodel.JobStep) JobStep {
	return JobStep{Seq: s.Seq, TaskState: s.TaskState, Step: s.Step, Text: s.Text, At: s.At.UTC()}
}

func offeringJSON(o readmodel.Offering) Offering {
	return Offering{
		ID: o.ID, Name: o.Name, CPU: o.CPU, MemoryMB: o.MemoryMB, HA: o.HA,
		DeploymentPlanner: o.DeploymentPlanner, PlannerMode: o.PlannerMode, HostTags: nonNil(o.HostTags),
	}
}
