package readmodel

import (
	"errors"
	"time"
)

// ErrNotFound is returned by Reader lookups that find no row.
var ErrNotFound = errors.New("not found")

// VM is a row of the vms read model.
type VM struct {
	ID             string
	Name           string
	Account        string
	ZoneID         string
	Offering       string // offering name
	OfferingID     string
	CPU            int32
	MemoryMB       int64
	VmState        string
	TaskState      string
	PowerState     string
	LegacyState    string
	HostID         string
	AllowedActions []string
	HA             bool
	JobID          string // job in flight or that made the last change
	Epoch          int64
	Version        int64 // Kafka offset of the event that wrote the row (ETag)
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// HostStatus is the agent status of the VM's host ("" when it has
	// none, or the read model has not seen the host); PowerSeenAt is when
	// PowerState was last seen: a report agreed with it, or its host
	// pinged since, listing its VMs (nil: neither has happened yet).
	HostStatus  string
	PowerSeenAt *time.Time
}

// Job is a row of the jobs read model.
//
// Its JSON names are the columns' names: JobWatch decodes the ended row
// that the projector's notification carries (row_to_json) into it.
type Job struct {
	ID             string     `json:"id"`
	VmID           string     `json:"vm_id"`
	Account        string     `json:"account"`
	Type           string     `json:"type"`
	State          string     `json:"state"` // pending, running, succeeded, failed, cancelled, rejected
	Reason         string     `json:"reason"`
	Detail         string     `json:"detail"`
	TaskState      string     `json:"task_state"`
	Origin         string     `json:"origin"`
	AllowedActions []string   `json:"allowed_actions"` // set for rejected jobs
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	// ErrorCode is the code of a failed, cancelled or rejected job's end
	// (schemas/job_codes.go).
	ErrorCode string `json:"error_code"`
	// Who asked (schemas.Caller); empty for jobs of records from before
	// the field. The JSON names are the columns', as the projector's
	// notifications carry the row.
	CallerAccount   string `json:"caller_account"`
	CallerKeyID     string `json:"caller_key_id"`
	CallerRequestID string `json:"caller_request_id"`
}

// JobFilter narrows a list of jobs; an empty field does not filter.
type JobFilter struct {
	Account string // the VM's owner
	VmID    string
	State   string
	KeyID   string // the API key that asked
}

// JobStep is a row of job_steps.
type JobStep struct {
	JobID     string
	Seq       int32
	TaskState string
	Step      string
	Text      string
	// Obj is the step's details as its event gave them (JSON).
	Obj string
	At  time.Time
}

// Host is a row of the hosts read model.
type Host struct {
	ID            string
	Name          string
	ZoneID        string
	PodID         string
	ClusterID     string
	Hypervisor    string
	Status        string
	ResourceState string
	Reservable    bool
	CPU           int32
	MemoryMB      int64
	UsedCPU       int32
	UsedMemoryMB  int64
	CPUOvercommit float64
	MemOvercommit float64
	LastPingAt    *time.Time
	UpdatedAt     time.Time
	Tags          []string
	VMCount       int // VMs on the host, not deleted
}

// Offering is a row of the offerings read model.
type Offering struct {
	ID                string
	Name              string
	CPU               int32
	MemoryMB          int64
	HA                bool
	DeploymentPlanner string
	HostTags          []string
	PlannerMode       string
	CreatedAt         time.Time
	StorageTags       []string
}

// APIKey is a row of api_keys (the secret is only stored as a hash).
type APIKey struct {
	KeyID     string
	AccountID string
	Role      string // admin or user
	Hash      string // hex SHA-256 of the secret
	ExpiresAt *time.Time
	Revoked   bool
}

// Alert is a row of the alerts read model.
type Alert struct {
	ID      string
	Kind    string
	VmID    string
	HostID  string
	Account string
	JobID   string
	ZoneID  string
	Message string
	At      time.Time
	// AckedBy and AckedAt are the alert's first acknowledgement; nil
	// AckedAt: not acknowledged.
	AckedBy string
	AckedAt *time.Time
}

// AlertFilter narrows an alert list; "" fields match everything, and a
// nil Acked takes acknowledged and open alerts alike.
type AlertFilter struct {
	Account string
	VmID    string
	HostID  string
	ZoneID  string
	Kind    string
	Acked   *bool
}

// VMFilter narrows a VM list; "" fields match everything.
type VMFilter struct {
	Account string
	VmState string
	HostID  string
}

// Page asks for one page of a list: at most Limit rows after the cursor.
type Page struct {
	Limit int
	After string // opaque cursor: the last id of the previous page
}
