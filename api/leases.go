package api

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"time"
)

// Lease is the API's lease (docs/design.md §8, §10): Blazar's lease with
// its reservations and the healing flags.
type Lease struct {
	ID           string             `json:"id"`
	Name         string             `json:"name"`
	ZoneID       string             `json:"zone_id"`
	Project      string             `json:"project"`
	Status       string             `json:"status"`
	Degraded     bool               `json:"degraded"`
	Start        time.Time          `json:"start"`
	End          time.Time          `json:"end"`
	Reason       string             `json:"reason,omitempty"`
	Reservations []LeaseReservation `json:"reservations"`
	CreatedAt    time.Time          `json:"created_at,omitzero"`
	UpdatedAt    time.Time          `json:"updated_at,omitzero"`
}

// LeaseReservation is one host reservation of a lease.
type LeaseReservation struct {
	ID               string            `json:"id,omitempty"`
	Status           string            `json:"status"`
	MinHosts         int32             `json:"min_hosts"`
	MaxHosts         int32             `json:"max_hosts"`
	HostProperties   map[string]string `json:"host_properties"`
	Hosts            []string          `json:"hosts"`
	MissingResources bool              `json:"missing_resources"`
	ResourcesChanged bool              `json:"resources_changed"`
}

// LeaseEvent is one notification of GET /v1/leases/{id}/events.
type LeaseEvent struct {
	Seq       string    `json:"seq"`
	Event     string    `json:"event"`
	Status    string    `json:"status,omitempty"`
	Degraded  bool      `json:"degraded"`
	HostID    string    `json:"host_id,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	CommandID string    `json:"command_id,omitempty"`
	At        time.Time `json:"at"`
}

// LeaseRequest is the body of POST /v1/leases. Start is "now" (or empty)
// or an RFC 3339 time; Project is for admins leasing for an account.
type LeaseRequest struct {
	Name         string               `json:"name" required:"true"`
	ZoneID       string               `json:"zone_id,omitempty"`
	Project      string               `json:"project,omitempty"`
	Start        string               `json:"start,omitempty"`
	End          string               `json:"end" required:"true"`
	Reservations []ReservationRequest `json:"reservations" required:"true"`
}

// LeaseUpdate is the body of PUT /v1/leases/{id}: any of the dates and the
// host counts (one entry per reservation, in order).
type LeaseUpdate struct {
	Start        string               `json:"start,omitempty"`
	End          string               `json:"end,omitempty"`
	Reservations []ReservationRequest `json:"reservations,omitempty"`
}

// ReservationRequest asks for hosts: a count range and properties. MaxHosts
// left out is MinHosts.
//
// OpenStack Blazar's names of a physical:host reservation are taken too
// (docs/design.md §10 has the table): Min and Max for MinHosts and
// MaxHosts, and HypervisorProperties and ResourceProperties, Blazar's JSON
// filters such as `["=", "$gpu", "yes"]`, whose equalities join
// HostProperties. A field given under both names must say the same. The
// answers keep vmplane's names.
type ReservationRequest struct {
	MinHosts       HostCount         `json:"min_hosts,omitempty"`
	MaxHosts       HostCount         `json:"max_hosts,omitempty"`
	HostProperties map[string]string `json:"host_properties,omitempty"`

	ResourceType         string    `json:"resource_type,omitempty"`
	Min                  HostCount `json:"min,omitempty"`
	Max                  HostCount `json:"max,omitempty"`
	HypervisorProperties string    `json:"hypervisor_properties,omitempty"`
	ResourceProperties   string    `json:"resource_properties,omitempty"`
}

// HostCount is a host count of a request. It takes any JSON number, so a
// count the range check refuses gets the range check's message: a count
// past int32 fails decoding as an int32 with "must be a number, not number
// 5000000000", which is wrong, and loses the reservation's index. A count
// with a fraction or past int32 reads as badCount, which no range holds.
type HostCount int32

// badCount is a HostCount that is no whole number of hosts: below 1, so
// that every range check refuses it.
const badCount HostCount = -1

// UnmarshalJSON reads a JSON number; anything else is a type error that
// names the field, as for any other field.
func (c *HostCount) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var n json.Number
	if b[0] == '"' || json.Unmarshal(b, &n) != nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b[0]), Type: reflect.TypeFor[int32]()}
	}
	*c = badCount
	// 3, 3.0 and 3e0 are all three hosts.
	if f, err := strconv.ParseFloat(n.String(), 64); err == nil && f == math.Trunc(f) && math.Abs(f) <= math.MaxInt32 {
		*c = HostCount(f)
	}
	return nil
}

// jsonValueKind names a JSON value by its first byte, as encoding/json's
// type errors do.
func jsonValueKind(first byte) string {
	switch first {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "bool"
}
