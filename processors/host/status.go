package host

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Agent statuses (the agent FSM of docs/design.md §6).
const (
	StatusCreating     = "Creating"
	StatusConnecting   = "Connecting"
	StatusUp           = "Up"
	StatusDown         = "Down"
	StatusDisconnected = "Disconnected"
	StatusAlert        = "Alert"
	StatusRemoved      = "Removed"
	StatusError        = "Error"
	StatusRebalancing  = "Rebalancing"
)

// Resource states (the admin intent FSM of docs/design.md §6).
const (
	ResourceCreating              = "Creating"
	ResourceEnabled               = "Enabled"
	ResourceDisabled              = "Disabled"
	ResourcePrepareForMaintenance = "PrepareForMaintenance"
	ResourceErrorInMaintenance    = "ErrorInMaintenance"
	ResourceMaintenance           = "Maintenance"
	ResourceError                 = "Error"
	ResourceUnmanaged             = "Unmanaged"
)

// setStatus moves the agent status and keeps reservable in step with it.
func setStatus(st *schemas.HostStatus, status, reason string) {
	if st.Status != status {
		st.Reason = reason
	}
	st.Status = status
	st.Reservable = st.Status == StatusUp && st.ResourceState == ResourceEnabled
}

// setResourceState moves the admin intent and keeps reservable in step.
func setResourceState(st *schemas.HostStatus, state, reason string) {
	if st.ResourceState != state {
		st.Reason = reason
	}
	st.ResourceState = state
	st.Reservable = st.Status == StatusUp && st.ResourceState == ResourceEnabled
}

// published is the part of a status whose change is news. The ping time,
// the update time and the reason ride along with a change but are never one
// on their own: steady pings must cost no output (storm control).
func published(st schemas.HostStatus) schemas.HostStatus {
	st.LastPingAt, st.UpdatedAt, st.Reason = 0, 0, ""
	if len(st.Tags) == 0 {
		st.Tags = nil
	}
	if len(st.Properties) == 0 {
		st.Properties = nil
	}
	return st
}

// announce returns the records that publish a host's status if it changed:
// the compacted host.status.v1 and the zone-keyed copies that let placement
// and the lease processor see the zone's hosts in order.
func announce(before *schemas.HostStatus, r *schemas.HostRecord, now time.Time, hdr map[string]string) []schemas.Record {
	if before != nil && reflect.DeepEqual(published(*before), published(r.Status)) {
		return nil
	}
	return publish(r, now, hdr)
}

// publish returns the records that publish a host's status, changed or not.
func publish(r *schemas.HostRecord, now time.Time, hdr map[string]string) []schemas.Record {
	r.Status.UpdatedAt = now.UnixMilli()
	st := copyStatus(r.Status)
	out := []schemas.Record{{Topic: schemas.TopicHostStatus, Key: st.HostID, Value: st, Headers: hdr}}
	if st.ZoneID != "" {
		out = append(out,
			schemas.Record{Topic: schemas.TopicPlacementRequests, Key: st.ZoneID, Value: st, Headers: hdr},
			schemas.Record{Topic: schemas.TopicLeaseCommands, Key: st.ZoneID, Value: st, Headers: hdr})
	}
	return out
}

func copyStatus(st schemas.HostStatus) *schemas.HostStatus {
	st.Tags = slices.Clone(st.Tags)
	st.Properties = maps.Clone(st.Properties)
	return &st
}

// clone copies a host record so that Step never changes the state it was
// given: the runtime may step the same state again after an aborted
// transaction.
func clone(r *schemas.HostRecord) *schemas.HostRecord {
	c := *r
	c.Status = *copyStatus(r.Status)
	c.VmLastSeen = maps.Clone(r.VmLastSeen)
	c.MissingSent = slices.Clone(r.MissingSent)
	c.Draining = slices.Clone(r.Draining)
	c.DrainFailed = slices.Clone(r.DrainFailed)
	c.DrainJobs = slices.Clone(r.DrainJobs)
	return &c
}
