package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// Reasons of PlacementFailed for a VM's storage.
const (
	// ReasonStorageUnavailable: no pool the hosts reach can take a volume,
	// or a volume's pool is Failed or Disabled; the detail names the pools
	// and their free space.
	ReasonStorageUnavailable = "StorageUnavailable"
	// ReasonHostLocalStorage: a migration of a VM with a volume on its
	// host's local pool, which no other host reaches.
	ReasonHostLocalStorage = "HostLocalStorage"
)

// site is where a VM's volumes must be reachable from: a host (and its
// cluster), a cluster only, or the whole zone (both empty).
type site struct{ host, cluster string }

func hostSite(h *schemas.HostCapacity) site { return site{host: h.HostID, cluster: h.ClusterID} }

// reaches says whether a pool's directory is there at s.
func reaches(p *schemas.PoolState, s site) bool {
	switch p.Scope {
	case schemas.PoolScopeHost:
		return s.host != "" && p.HostID == s.host
	case schemas.PoolScopeCluster:
		return s.cluster != "" && p.ClusterID == s.cluster
	}
	return true
}

// tiers are the pools s reaches, in the order a new volume prefers them:
// host-local (fastest, no shared storage traffic), then the cluster's, then
// the zone's.
func (ix *zoneIndex) tiers(s site) [3][]int {
	var t [3][]int
	if s.host != "" {
		t[0] = ix.hostPools[s.host]
	}
	if s.cluster != "" {
		t[1] = ix.clusterPools[s.cluster]
	}
	t[2] = ix.zonePools
	return t
}

// pending is what one request has already given each pool, MiB: volumes of
// one request may share a pool and must fit together. Requests carry a
// few volumes, so a slice beats a map.
type pending []struct {
	pool int
	mb   int64
}

func (p pending) of(i int) int64 {
	for _, e := range p {
		if e.pool == i {
			return e.mb
		}
	}
	return 0
}

func (p *pending) add(i int, mb int64) {
	for k := range *p {
		if (*p)[k].pool == i {
			(*p)[k].mb += mb
			return
		}
	}
	*p = append(*p, struct {
		pool int
		mb   int64
	}{i, mb})
}

// fitVolumes chooses a pool for each of the request's volumes at s: a
// volume's own pool when it names one (it must reach s, and take its
// growth), else the preferred pool with the most free space that is Up and
// carries the offering's storage tags. It returns the pools' positions,
// one per volume, or why not.
func (ix *zoneIndex) fitVolumes(req *schemas.PlaceVm, s site) ([]int, string) {
	z := ix.z
	plan := make([]int, len(req.Volumes))
	var given pending
	for k := range req.Volumes {
		v := &req.Volumes[k]
		if v.PoolID != "" {
			i, ok := ix.pool[v.PoolID]
			if !ok {
				return nil, fmt.Sprintf("volume %s is on pool %s, which is not in the zone", v.VolumeID, v.PoolID)
			}
			p := &z.Pools[i]
			if !reaches(p, s) {
				return nil, fmt.Sprintf("volume %s is on %s, which %s does not reach", v.VolumeID, poolName(p), s)
			}
			need := v.SizeMB - ix.claimedOn(v.VolumeID, v.PoolID)
			if free := p.CapacityMB - p.UsedMB - given.of(i); need > 0 && free < need {
				return nil, fmt.Sprintf("volume %s grows by %d MiB: %s has %d MiB free", v.VolumeID, need, poolName(p), free)
			}
			given.add(i, max(need, 0))
			plan[k] = i
			continue
		}
		best := -1
		var bestFree int64
		for _, tier := range ix.tiers(s) {
			for _, i := range tier {
				p := &z.Pools[i]
				free := p.CapacityMB - p.UsedMB - given.of(i)
				if p.State != schemas.PoolUp || free < v.SizeMB || !hasTags(p.Tags, req.StorageTags) {
					continue
				}
				if best < 0 || free > bestFree || (free == bestFree && p.PoolID < z.Pools[best].PoolID) {
					best, bestFree = i, free
				}
			}
			if best >= 0 {
				break
			}
		}
		if best < 0 {
			return nil, ix.noPool(v, req.StorageTags, s, given)
		}
		given.add(best, v.SizeMB)
		plan[k] = best
	}
	return plan, ""
}

// noPool explains why no pool at s takes a volume, pool by pool, e.g. "no
// pool can take 20480 MiB for vol-1: pool primary (p1) has 1024 MiB free":
// an operator must read which pool is full. A tier's pools are listed by
// id, so a restored zone (its pools assembled by id) says the same.
func (ix *zoneIndex) noPool(v *schemas.Volume, tags []string, s site, given pending) string {
	var parts []string
	for _, tier := range ix.tiers(s) {
		byID := slices.SortedFunc(slices.Values(tier), func(a, b int) int {
			return strings.Compare(ix.z.Pools[a].PoolID, ix.z.Pools[b].PoolID)
		})
		for _, i := range byID {
			p := &ix.z.Pools[i]
			switch {
			case p.State != schemas.PoolUp:
				parts = append(parts, fmt.Sprintf("%s is %s", poolName(p), p.State))
			case !hasTags(p.Tags, tags):
				parts = append(parts, fmt.Sprintf("%s lacks storage tags %v", poolName(p), tags))
			default:
				parts = append(parts, fmt.Sprintf("%s has %d MiB free", poolName(p), p.CapacityMB-p.UsedMB-given.of(i)))
			}
		}
	}
	if len(parts) == 0 {
		parts = []string{"no pool reaches " + s.String()}
	}
	return fmt.Sprintf("no pool can take %d MiB for %s: %s", v.SizeMB, v.VolumeID, strings.Join(parts, ", "))
}

func (s site) String() string {
	switch {
	case s.host != "":
		return "host " + s.host
	case s.cluster != "":
		return "cluster " + s.cluster
	}
	return "the zone"
}

func poolName(p *schemas.PoolState) string {
	if p.Name == "" || p.Name == p.PoolID {
		return "pool " + p.PoolID
	}
	return "pool " + p.Name + " (" + p.PoolID + ")"
}

// claimedOn is what a volume's claim holds on a pool, MiB; 0 for none.
func (ix *zoneIndex) claimedOn(volumeID, poolID string) int64 {
	if c, ok := ix.claimOf(volumeID); ok && c.PoolID == poolID {
		return c.SizeMB
	}
	return 0
}

// refuseVolumes says why a request's volumes cannot be placed on any host,
// whatever the planner: a volume claimed by another VM, a pool that is
// gone, Failed or Disabled, or host-local storage of a host the request
// avoids (a live migration away from it). "" when they may be.
func (ix *zoneIndex) refuseVolumes(req *schemas.PlaceVm) (reason, detail string) {
	for k := range req.Volumes {
		v := &req.Volumes[k]
		if c, ok := ix.claimOf(v.VolumeID); ok && c.VmID != req.VmID {
			return ReasonStorageUnavailable, fmt.Sprintf("volume %s is claimed by VM %s", v.VolumeID, c.VmID)
		}
		if v.PoolID == "" {
			continue
		}
		i, ok := ix.pool[v.PoolID]
		if !ok {
			return ReasonStorageUnavailable, fmt.Sprintf("volume %s is on pool %s, which is not in the zone", v.VolumeID, v.PoolID)
		}
		p := &ix.z.Pools[i]
		if p.State != schemas.PoolUp && p.State != schemas.PoolMaintenance {
			return ReasonStorageUnavailable, fmt.Sprintf("volume %s is on %s, which is %s", v.VolumeID, poolName(p), p.State)
		}
		if p.Scope == schemas.PoolScopeHost && !req.VolumesOnly && avoids(req, p.HostID) {
			return ReasonHostLocalStorage, fmt.Sprintf("volume %s is on host-local storage (%s of host %s) and cannot live-migrate",
				v.VolumeID, poolName(p), p.HostID)
		}
	}
	return "", ""
}

func avoids(req *schemas.PlaceVm, hostID string) bool {
	for _, h := range req.AvoidHosts {
		if h == hostID {
			return true
		}
	}
	return false
}

// releaseUnplaced drops the claims of the request's volumes that name no
// pool: the VM does not know where they went (a deploy retried after a
// failed start), so they are placed afresh.
func (ix *zoneIndex) releaseUnplaced(req *schemas.PlaceVm, t *touched) {
	for k := range req.Volumes {
		v := &req.Volumes[k]
		if v.PoolID != "" {
			continue
		}
		if c, ok := ix.claimOf(v.VolumeID); ok && c.VmID == req.VmID {
			// c points into the claims, where dropVolume moves another.
			dropped, _ := ix.dropVolume(v.VolumeID)
			t.pool(dropped.PoolID)
		}
	}
}

// claimVolumes claims the planned pools: a volume's claim is its size, and
// never shrinks (a disk image does not).
func (ix *zoneIndex) claimVolumes(req *schemas.PlaceVm, plan []int, t *touched) {
	for k := range req.Volumes {
		v := &req.Volumes[k]
		p := &ix.z.Pools[plan[k]]
		size := v.SizeMB
		if c, ok := ix.claimOf(v.VolumeID); ok && c.PoolID == p.PoolID {
			if c.SizeMB >= size {
				continue
			}
		}
		ix.setVolume(schemas.VolumeClaim{VmID: req.VmID, VolumeID: v.VolumeID, PoolID: p.PoolID, SizeMB: size})
		t.pool(p.PoolID)
	}
}

// releaseVolumes drops the claims of a VM's volumes: those listed, or all
// when ids is nil.
func (ix *zoneIndex) releaseVolumes(vmID string, ids []string, t *touched) {
	if ids == nil {
		ids = append([]string(nil), ix.vmVolumes[vmID]...)
	}
	for _, id := range ids {
		if c, ok := ix.claimOf(id); ok && c.VmID == vmID {
			// c points into the claims, where dropVolume moves another.
			dropped, _ := ix.dropVolume(id)
			t.pool(dropped.PoolID)
		}
	}
}
