package host

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Reasons of maintenance.
const (
	ReasonPreparing        = "preparing for maintenance"
	ReasonMaintenance      = "in maintenance"
	ReasonDrainFailed      = "maintenance migrations failed: "
	ReasonMaintenanceEnded = "maintenance cancelled by admin"
)

// maintPrefix starts the command id of every maintenance Migrate, which is
// also its job id: the host relay recognises the job's end by it.
const maintPrefix = "maint:"

// MaintenanceJobID mints the command id of the Migrate that drains vmID from
// hostID in maintenance round round. It is a function of the round, so a
// redelivered PrepareForMaintenance (same round in the restored state)
// sends the same ids and the VM processor's dedup absorbs them.
func MaintenanceJobID(hostID string, round int64, vmID string) string {
	return schemas.BoundID(fmt.Sprintf("%s%s:%d:%s", maintPrefix, hostID, round, vmID))
}

// ParseMaintenanceJobID returns the host and round of a maintenance job id;
// ok is false for any other job.
func ParseMaintenanceJobID(jobID string) (hostID string, round int64, ok bool) {
	rest, found := strings.CutPrefix(jobID, maintPrefix)
	if !found {
		return "", 0, false
	}
	// The VM id is last and host ids contain no ':'.
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return "", 0, false
	}
	round, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return parts[0], round, true
}

// drainJobsKept is how many PrepareForMaintenance command ids a host
// remembers to know a repeat (a client's retry) from a new request.
const drainJobsKept = 16

// prepare starts draining an Up host: one internal Migrate per VM its last
// report listed (placement picks a destination other than this host), joined by
// migrationEnded. A host with no VMs is in Maintenance at once. A host that
// is not Up cannot migrate anything, and one already preparing or in
// maintenance has nothing to start; both ignore the command. A host in
// ErrorInMaintenance may try again.
func (m *Machine) prepare(s *schemas.HostRecord, c *schemas.PrepareForMaintenance, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	switch {
	case s == nil:
		// No job: an unknown host has no record to remember the command
		// by, and a repeat after it registered would start the job that
		// was refused (the gateway sends commands of known hosts only).
		return s, nil
	case slices.Contains(s.DrainJobs, c.CommandID):
		return s, nil // a repeat: the job was taken, or refused, already
	}
	r := clone(s)
	if c.CommandID != "" {
		r.DrainJobs = append(r.DrainJobs, c.CommandID)
		r.DrainJobs = r.DrainJobs[max(0, len(r.DrainJobs)-drainJobsKept):]
	}
	if s.Status.Status != StatusUp {
		return r, drainRejected(c.HostID, c.CommandID, c.Caller, fmt.Sprintf("host is %s: only an Up host can move its VMs away", s.Status.Status), now, hdr)
	}
	switch s.Status.ResourceState {
	case ResourceEnabled, ResourceDisabled, ResourceErrorInMaintenance:
	default:
		return r, drainRejected(c.HostID, c.CommandID, c.Caller, "host is "+s.Status.ResourceState, now, hdr)
	}
	r.Maintenance++
	r.Draining, r.DrainFailed = current(r), nil
	if len(r.Draining) == 0 {
		setResourceState(&r.Status, ResourceMaintenance, ReasonMaintenance)
		return r, append(announce(&s.Status, r, now, hdr), drainStarted(r, c.CommandID, c.Caller, now, hdr)...)
	}
	setResourceState(&r.Status, ResourcePrepareForMaintenance, ReasonPreparing)
	r.DrainJob, r.DrainTotal = c.CommandID, int32(len(r.Draining))
	out := append(announce(&s.Status, r, now, hdr), drainStarted(r, c.CommandID, c.Caller, now, hdr)...)
	for _, vm := range r.Draining {
		id := MaintenanceJobID(r.Status.HostID, r.Maintenance, vm)
		out = append(out, schemas.Record{Topic: schemas.TopicVmCommands, Key: vm, Headers: withCommand(hdr, id), Value: &schemas.Migrate{
			// The admin who asked for the maintenance caused each migration.
			VmCommand: schemas.VmCommand{CommandID: id, VmID: vm, Account: c.Account, Origin: schemas.OriginInternal,
				IssuedAt: now.UnixMilli(), Caller: c.Caller},
		}})
	}
	return r, out
}

// migrationEnded joins one drain job. When the last one ended the host is in
// Maintenance if all succeeded, else in ErrorInMaintenance with the failed
// VMs named. Ends of an earlier round, or after a cancel, are stale.
func (m *Machine) migrationEnded(s *schemas.HostRecord, e *schemas.MaintenanceMigrationEnded, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	if s == nil || s.Status.ResourceState != ResourcePrepareForMaintenance {
		return s, nil
	}
	if host, round, ok := ParseMaintenanceJobID(e.JobID); !ok || host != s.Status.HostID || round != s.Maintenance {
		return s, nil
	}
	i := indexOf(s.Draining, e.VmID)
	if i < 0 {
		return s, nil
	}
	r := clone(s)
	r.Draining = append(r.Draining[:i], r.Draining[i+1:]...)
	if !e.OK {
		r.DrainFailed = append(r.DrainFailed, e.VmID)
	}
	if len(r.Draining) > 0 {
		return r, drainStepped(r, e, now, hdr)
	}
	r.Draining = nil
	if len(r.DrainFailed) == 0 {
		setResourceState(&r.Status, ResourceMaintenance, ReasonMaintenance)
		return r, append(announce(&s.Status, r, now, hdr), drainStepped(r, e, now, hdr)...)
	}
	reason := ReasonDrainFailed + strings.Join(r.DrainFailed, ", ")
	setResourceState(&r.Status, ResourceErrorInMaintenance, reason)
	out := append(announce(&s.Status, r, now, hdr), drainStepped(r, e, now, hdr)...)
	return r, append(out, raise(r, AlertErrorInMaintenance, reason, now, hdr))
}

// cancelMaintenance returns a host preparing for, in, or failed in
// maintenance to Enabled. Drain jobs still running finish on their own; their
// ends are stale from now on.
func (m *Machine) cancelMaintenance(s *schemas.HostRecord, c *schemas.CancelMaintenance, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	if s == nil || s.Status.Status == StatusRemoved {
		return s, nil
	}
	r := clone(s)
	var out []schemas.Record
	switch r.Status.ResourceState {
	case ResourcePrepareForMaintenance, ResourceMaintenance, ResourceErrorInMaintenance:
		setResourceState(&r.Status, ResourceEnabled, ReasonMaintenanceEnded)
		r.Draining, r.DrainFailed = nil, nil
		out = drainCancelled(r, c.Account+" (CancelMaintenance)", now, hdr)
	}
	return r, append(announce(&s.Status, r, now, hdr), out...)
}

// current returns, sorted, the VMs the host's last hello or ping listed. A
// VM that has left since is not drained: its Migrate would move it off
// whatever host it runs on now.
func current(r *schemas.HostRecord) []string {
	var out []string
	for _, id := range listed(r) {
		if r.VmLastSeen[id] == r.Status.LastPingAt {
			out = append(out, id)
		}
	}
	return out
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
