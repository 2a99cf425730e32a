package journal

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// hostRow is one row of host_events, in the column order of insertHosts.
type hostRow struct {
	HostID, Name, ZoneID, ClusterID string
	Status, ResourceState           string
	Reservable                      uint8
	Reason, Payload                 string
	AtMs                            int64
	Topic                           string
	Partition                       int32
	Offset                          int64
}

// leaseRow is one row of lease_events, in the column order of insertLeases.
type leaseRow struct {
	LeaseID, ZoneID, Project, Name string
	Status                         string
	Degraded                       uint8
	Event, Detail, Payload         string
	AtMs                           int64
	Topic                          string
	Partition                      int32
	Offset                         int64
}

// hostRowOf turns a record of host.status.v1 into its host_events row. Like
// rowsOf it is pure, so a redelivered record repeats its row exactly.
func hostRowOf(r schemas.Record, ps *payloads) (hostRow, error) {
	v, ok := r.Value.(*schemas.HostStatus)
	if !ok {
		return hostRow{}, fmt.Errorf("%s carries %s, want HostStatus", r.Topic, schemas.TypeName(r.Value))
	}
	payload, err := ps.render(v)
	if err != nil {
		return hostRow{}, fmt.Errorf("render HostStatus %s as JSON: %w", v.HostID, err)
	}
	at := v.UpdatedAt
	if at <= 0 {
		at = r.TimestampMs
	}
	return hostRow{
		HostID: v.HostID, Name: v.Name, ZoneID: v.ZoneID, ClusterID: v.ClusterID,
		Status: v.Status, ResourceState: v.ResourceState, Reservable: boolByte(v.Reservable),
		Reason: v.Reason, Payload: payload, AtMs: at,
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}, nil
}

// leaseRowOf turns a record of lease.events.v1 into its lease_events row: a
// lease's status change, or a host's resource status change (LeaseHostChanged,
// with the leases holding the host in its detail and no lease id of its own).
func leaseRowOf(r schemas.Record, ps *payloads) (leaseRow, error) {
	if h, ok := r.Value.(*schemas.LeaseHostChanged); ok {
		return hostChangeRowOf(r, h, ps)
	}
	v, ok := r.Value.(*schemas.LeaseStatusChanged)
	if !ok {
		return leaseRow{}, fmt.Errorf("%s carries %s, want LeaseStatusChanged or LeaseHostChanged", r.Topic, schemas.TypeName(r.Value))
	}
	payload, err := ps.render(v)
	if err != nil {
		return leaseRow{}, fmt.Errorf("render LeaseStatusChanged %s as JSON: %w", v.LeaseID, err)
	}
	at := v.At
	if at <= 0 {
		at = r.TimestampMs
	}
	return leaseRow{
		LeaseID: v.LeaseID, ZoneID: v.ZoneID, Project: v.Project, Name: v.Name,
		Status: v.Status, Degraded: boolByte(v.Degraded), Event: v.Event, Detail: v.Detail,
		Payload: payload, AtMs: at,
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}, nil
}

func hostChangeRowOf(r schemas.Record, h *schemas.LeaseHostChanged, ps *payloads) (leaseRow, error) {
	payload, err := ps.render(h)
	if err != nil {
		return leaseRow{}, fmt.Errorf("render LeaseHostChanged %s as JSON: %w", h.HostID, err)
	}
	at := h.At
	if at <= 0 {
		at = r.TimestampMs
	}
	detail := fmt.Sprintf("host %s reservable=%t status=%s resource_state=%s leases=%v", h.HostID, h.Reservable, h.Status, h.ResourceState, h.Leases)
	if h.Reason != "" {
		detail += ": " + h.Reason
	}
	return leaseRow{
		ZoneID: h.ZoneID, Event: "host_changed", Detail: detail, Payload: payload, AtMs: at,
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}, nil
}

// boolByte is a UInt8 column's value of a bool (18.16 has no Bool type).
func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
