package placement

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// placeVolumes answers PlaceVm{VolumesOnly}: pools for a VM's new or grown
// volumes, its host claims untouched. A new volume goes on a pool the VM's
// host reaches; a VM without a host (stopped) gets one its existing
// volumes' site reaches, so it can still start wherever they let it. A
// grown volume stays on its pool, which must take the growth.
func (m *Machine) placeVolumes(z *schemas.ZoneRecord, req *schemas.PlaceVm, now time.Time, hdr map[string]string) []schemas.Record {
	ix := m.index(z)
	planner := m.plannerName(req)
	if ix.decided[req.RequestID] {
		// A repeat: answered from the claims as they are, claiming nothing.
		return []schemas.Record{signal(req.VmID, decided(ix, req, req.HostID, planner), hdr)}
	}
	t := &touched{}
	ix.releaseUnplaced(req, t)
	fail := func(reason, detail string) []schemas.Record {
		return append(ix.events(t, now, hdr), signal(req.VmID, failed(req, reason, detail), hdr))
	}
	if reason, why := ix.refuseVolumes(req); reason != "" {
		return fail(reason, why)
	}
	s, ok := ix.siteOf(req)
	if !ok {
		return fail(ReasonUnknownHost, "no host "+req.HostID+" in zone "+z.ZoneID)
	}
	plan, why := ix.fitVolumes(req, s)
	if why != "" {
		return fail(ReasonStorageUnavailable, why)
	}
	ix.claimVolumes(req, plan, t)
	m.remember(ix, req.RequestID)
	return append(ix.events(t, now, hdr), signal(req.VmID, decided(ix, req, req.HostID, planner), hdr))
}

// siteOf is where a VM's volumes must be reachable from: its host when the
// request names one; else the narrowest site of the pools its volumes are
// on — a host-local pool ties the VM to that host, a cluster pool to that
// cluster, and zone pools to nowhere in particular.
func (ix *zoneIndex) siteOf(req *schemas.PlaceVm) (site, bool) {
	if req.HostID != "" {
		i, ok := ix.host[req.HostID]
		if !ok {
			return site{}, false
		}
		return hostSite(&ix.z.Hosts[i]), true
	}
	var s site
	for _, id := range ix.vmVolumes[req.VmID] {
		c, _ := ix.claimOf(id)
		i, ok := ix.pool[c.PoolID]
		if !ok {
			continue
		}
		switch p := &ix.z.Pools[i]; p.Scope {
		case schemas.PoolScopeHost:
			s.host = p.HostID
			if h, ok := ix.host[p.HostID]; ok {
				s.cluster = ix.z.Hosts[h].ClusterID
			}
			return s, true
		case schemas.PoolScopeCluster:
			s.cluster = p.ClusterID
		}
	}
	return s, true
}
