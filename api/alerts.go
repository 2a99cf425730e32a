package api

import "time"

// Alert is the JSON of an alert.
type Alert struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	VmID    string    `json:"vm_id,omitempty"`
	HostID  string    `json:"host_id,omitempty"`
	JobID   string    `json:"job_id,omitempty"`
	ZoneID  string    `json:"zone_id,omitempty"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
	// AckedBy and AckedAt say who acknowledged the alert, and when;
	// absent while it is open.
	AckedBy string     `json:"acked_by,omitempty"`
	AckedAt *time.Time `json:"acked_at,omitempty"`
}
