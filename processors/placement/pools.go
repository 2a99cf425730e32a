package placement

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// updateStoragePool applies an UpdateStoragePool: the pool's desired state.
// A change that would strand a volume (a delete, a capacity below what is
// claimed, a move to another scope while volumes are on it) is refused with
// the pool as it was; every answer is a StoragePoolChanged, so the
// operator always hears back. A pool that goes Failed takes its volumes'
// disks with it: each VM with one is told (StoragePoolDown), as a host's
// VMs are when the host is fenced.
func (m *Machine) updateStoragePool(z *schemas.ZoneRecord, req *schemas.UpdateStoragePool, now time.Time, hdr map[string]string) []schemas.Record {
	ix := m.index(z)
	if !m.firstTime(ix, req.RequestID) {
		return nil
	}
	i, known := ix.pool[req.PoolID]
	cur := schemas.PoolState{PoolID: req.PoolID, ZoneID: z.ZoneID, Name: req.Name}
	if known {
		cur = z.Pools[i]
	}
	changed := func(p schemas.PoolState, deleted bool, why string) schemas.Record {
		p.Tags = slices.Clone(p.Tags)
		return event(z.ZoneID, &schemas.StoragePoolChanged{Pool: p, Deleted: deleted, Refused: why, At: now.UnixMilli()}, hdr)
	}
	if why := refusePool(req, known, cur); why != "" {
		return []schemas.Record{changed(cur, false, why)}
	}
	if req.Deleted {
		z.Pools = slices.Delete(z.Pools, i, i+1)
		ix.indexPools()
		ix.poolChanged(req.PoolID)
		return []schemas.Record{changed(cur, true, "")}
	}
	next := schemas.PoolState{
		PoolID: req.PoolID, ZoneID: z.ZoneID, Name: req.Name, Scope: req.Scope, ClusterID: req.ClusterID,
		HostID: req.HostID, Path: req.Path, CapacityMB: req.CapacityMB, UsedMB: cur.UsedMB, Volumes: cur.Volumes,
		Tags: slices.Clone(req.Tags), State: poolState(req.State),
	}
	switch {
	case !known:
		z.Pools = append(z.Pools, next)
		ix.addPoolScope(len(z.Pools) - 1)
	case cur.Scope != next.Scope || cur.ClusterID != next.ClusterID || cur.HostID != next.HostID:
		z.Pools[i] = next
		ix.indexPools()
	default:
		z.Pools[i] = next
	}
	ix.poolChanged(req.PoolID)
	out := []schemas.Record{changed(next, false, "")}
	if next.State == schemas.PoolFailed && cur.State != schemas.PoolFailed {
		vms := make([]string, 0, len(ix.poolVMs[next.PoolID]))
		for vm := range ix.poolVMs[next.PoolID] {
			vms = append(vms, vm)
		}
		sort.Strings(vms)
		for _, vm := range vms {
			out = append(out, signal(vm, &schemas.StoragePoolDown{VmID: vm, PoolID: next.PoolID, ZoneID: z.ZoneID, At: now.UnixMilli()}, hdr))
		}
	}
	return out
}

// poolState is a request's state, Up when it names none.
func poolState(s string) string {
	if s == "" {
		return schemas.PoolUp
	}
	return s
}

// refusePool says why an UpdateStoragePool cannot be applied; "" when it can.
func refusePool(req *schemas.UpdateStoragePool, known bool, cur schemas.PoolState) string {
	switch {
	case req.PoolID == "":
		return "no pool id"
	case req.Deleted && !known:
		return "no pool " + req.PoolID + " in the zone"
	case req.Deleted && cur.Volumes > 0:
		return fmt.Sprintf("%d volumes (%d MiB) are on the pool; delete or move them first", cur.Volumes, cur.UsedMB)
	case req.Deleted:
		return ""
	}
	if why := refuseScope(req); why != "" {
		return why
	}
	switch poolState(req.State) {
	case schemas.PoolUp, schemas.PoolMaintenance, schemas.PoolFailed, schemas.PoolDisabled:
	default:
		return fmt.Sprintf("state %q: want Up, Maintenance, Failed or Disabled", req.State)
	}
	switch {
	case !strings.HasPrefix(req.Path, "/"):
		return fmt.Sprintf("path %q is not an absolute directory", req.Path)
	case strings.ContainsAny(req.Path, ", \t\n\r"):
		// An agent puts the path in QEMU's -drive option, which a comma
		// or a space would split: no volume there could start.
		return fmt.Sprintf("path %q has a comma or white space", req.Path)
	case req.CapacityMB <= 0:
		return fmt.Sprintf("capacity %d MiB: want more than 0", req.CapacityMB)
	case known && req.CapacityMB < cur.UsedMB:
		return fmt.Sprintf("capacity %d MiB is below the %d MiB its volumes claim", req.CapacityMB, cur.UsedMB)
	case known && cur.Volumes > 0 && (req.Scope != cur.Scope || req.ClusterID != cur.ClusterID ||
		req.HostID != cur.HostID || req.Path != cur.Path):
		return fmt.Sprintf("scope, cluster, host and path cannot change while %d volumes are on the pool", cur.Volumes)
	}
	return ""
}

// refuseScope says why a pool's scope and its owner do not go together.
func refuseScope(req *schemas.UpdateStoragePool) string {
	switch req.Scope {
	case schemas.PoolScopeZone:
		if req.ClusterID != "" || req.HostID != "" {
			return "a Zone pool names no cluster or host"
		}
	case schemas.PoolScopeCluster:
		if req.ClusterID == "" || req.HostID != "" {
			return "a Cluster pool names its cluster_id and no host"
		}
	case schemas.PoolScopeHost:
		if req.HostID == "" {
			return "a Host pool names its host_id"
		}
	default:
		return fmt.Sprintf("scope %q: want Zone, Cluster or Host", req.Scope)
	}
	return ""
}
