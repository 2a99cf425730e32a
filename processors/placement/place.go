package placement

import (
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// Reasons of PlacementFailed; PlacementFailed.Detail says which filters
// removed how many hosts.
const (
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonNoReservableHost     = "NoReservableHost"
	ReasonUnknownPlanner       = "UnknownPlanner"
	ReasonMoveInProgress       = "MoveInProgress"
	ReasonHostRefused          = "HostRefused"
)

// place is the planning manager: it answers one PlaceVm, claiming capacity
// at most once per request.
func (m *Machine) place(z *schemas.ZoneRecord, req *schemas.PlaceVm, now time.Time, hdr map[string]string) []schemas.Record {
	ix := m.index(z)
	for _, q := range ix.allocationsOf(req.VmID) {
		if a := z.Allocations[q]; a.RequestID == req.RequestID {
			// A redelivered or repeated request: answer as before, claim nothing.
			return []schemas.Record{signal(req.VmID, decided(ix, req, a.HostID, m.plannerName(req)), hdr)}
		}
	}
	if ix.decided[req.RequestID] {
		// Decided once, and the VM has released that claim since: the
		// request is stale and answering it again could only mislead.
		return nil
	}
	var out []schemas.Record
	t := &touched{}
	ix.releaseUnplaced(req, t)
	// A VM holding a claim from another request (a retried job, a start
	// after a failed one) gives it back first, so a VM never counts twice —
	// except while it migrates: a request that avoids a host the VM holds
	// keeps that claim until the VM releases it after the move.
	for _, ev := range ix.releaseExcept(req.VmID, req.AvoidHosts, req.RequestID, now) {
		out = append(out, event(z.ZoneID, ev, hdr))
	}
	group, anti := affinityOf(req.Account, req.AffinityGroup)
	return append(out, m.decide(ix, req, group, anti, t, now, hdr)...)
}

// decide chooses a host for req and claims it, with pools for its volumes
// and addresses for its NICs, or answers why not. t holds the pools and
// networks the step changed before, so each is told once.
func (m *Machine) decide(ix *zoneIndex, req *schemas.PlaceVm, group string, anti bool, t *touched, now time.Time, hdr map[string]string) []schemas.Record {
	z := ix.z
	fail := func(reason, detail string) []schemas.Record {
		return append(ix.events(t, now, hdr), signal(req.VmID, failed(req, reason, detail), hdr))
	}
	p, ok := m.planners[m.plannerName(req)]
	if !ok {
		return fail(ReasonUnknownPlanner, "unknown planner "+m.plannerName(req))
	}
	a := &ask{req: req, planner: p, usage: p.ResourceUsage(), group: group, anti: anti, members: ix.groups[group]}
	if reason, why := ix.refuseVolumes(req); reason != "" {
		return fail(reason, why)
	}
	var grants []grant
	if len(req.Nics) > 0 {
		var why string
		if grants, why = ix.planNics(req); why != "" {
			return fail(ReasonNetworkUnavailable, why)
		}
	}
	if why := ix.refuseRequired(a); why != "" {
		if len(a.storage.whys) > 0 {
			return fail(ReasonStorageUnavailable, "host "+a.req.HostID+": "+a.storage.whys[0])
		}
		return fail(ReasonHostRefused, why)
	}
	v := ix.view(req.Account)
	i := ix.choose(v, a)
	if i < 0 {
		if fb, ok := p.(fallbackPlanner); ok && a.usage == Dedicated && fb.FallBackToShared(req) {
			a.usage = Shared
			i = ix.choose(v, a)
		}
	}
	if i < 0 {
		reason := ReasonNoReservableHost
		if slices.ContainsFunc(z.Hosts, func(h schemas.HostCapacity) bool { return h.Reservable }) {
			reason = ReasonInsufficientCapacity
		}
		// whyNot looks at every host, so the storage reasons are all in
		// when it returns.
		a.storage = storageWhy{}
		detail := ix.whyNot(a)
		if len(a.storage.whys) > 0 {
			// Hosts that passed every other filter lack storage: the
			// pools are what an operator must fix, so they come first.
			reason, detail = ReasonStorageUnavailable, a.storage.String()+"; "+detail
		}
		return fail(reason, detail)
	}
	var out []schemas.Record
	if ev := ix.reserve(i, p.Name(), a.usage, req.Account, now); ev != nil {
		out = append(out, event(z.ZoneID, ev, hdr))
	}
	out = append(out, event(z.ZoneID, ix.allocate(i, req, group, now), hdr))
	if len(req.Volumes) > 0 {
		plan, _ := ix.fitVolumes(req, hostSite(&z.Hosts[i]))
		ix.claimVolumes(req, plan, t)
	}
	ix.claimNics(grants, t)
	out = append(out, ix.events(t, now, hdr)...)
	m.remember(ix, req.RequestID)
	return append(out, signal(req.VmID, decided(ix, req, z.Hosts[i].HostID, p.Name()), hdr))
}

// choose returns the position of the host to claim: the asked-for host when
// it is acceptable, else the first acceptable host (or, for a HostScorer,
// the best scored) of the first cluster in the planner's order that has
// one; -1 for none.
func (ix *zoneIndex) choose(v View, a *ask) int {
	if id := a.req.HostID; id != "" {
		if i, ok := ix.host[id]; ok && ix.refuse(i, a) == "" {
			return i
		}
	}
	q := ix.queue(v, a)
	for c := q.pop(); c != nil; c = q.pop() {
		if i := ix.chooseIn(v, a, c); i >= 0 {
			return i
		}
	}
	return -1
}

// chooseIn returns the first acceptable host of cluster c or, for a
// HostScorer, the best scored; -1 for none. Capacity is checked first:
// it is the cheapest filter and, in a busy zone, the one that refuses most
// hosts.
func (ix *zoneIndex) chooseIn(v View, a *ask, c *clusterIndex) int {
	scorer, scored := a.planner.(HostScorer)
	top, capped := a.planner.(TopScorer)
	cpu, mem := a.req.Offering.CPU, a.req.Offering.MemoryMB
	best, bestScore := -1, 0.0
	for _, i := range c.hosts {
		if !ix.fits(i, cpu, mem) || ix.refuse(i, a) != "" {
			continue
		}
		if !scored {
			return i
		}
		if s := scorer.ScoreHost(v, Host{&ix.z.Hosts[i], i}, a.req); best < 0 || s > bestScore {
			best, bestScore = i, s
			if capped && s >= top.TopScore() {
				return i
			}
		}
	}
	return best
}

// refuseRequired says why the host a request requires cannot be claimed;
// "" when it can, or when the request only prefers a host.
func (ix *zoneIndex) refuseRequired(a *ask) string {
	id := a.req.HostID
	if !a.req.HostRequired || id == "" {
		return ""
	}
	i, ok := ix.host[id]
	if !ok {
		return "no host " + id + " in zone " + ix.z.ZoneID
	}
	if why := ix.refuse(i, a); why != "" {
		return "host " + id + ": " + why
	}
	return ""
}

// releaseExcept releases a VM's claims except those on the hosts in keep.
func (ix *zoneIndex) releaseExcept(vmID string, keep []string, requestID string, now time.Time) []*schemas.CapacityReleased {
	var hosts []string
	for _, q := range ix.allocationsOf(vmID) {
		if h := ix.z.Allocations[q].HostID; !slices.Contains(keep, h) {
			hosts = append(hosts, h)
		}
	}
	var out []*schemas.CapacityReleased
	for _, h := range hosts {
		out = append(out, ix.release(vmID, h, requestID, now)...)
	}
	return out
}

// firstTime says whether an admin's request (a pool's or a network's
// desired state) is new, and remembers it: a repeat of one applied changes
// nothing and answers nothing. A request without an id is applied each
// time.
func (m *Machine) firstTime(ix *zoneIndex, requestID string) bool {
	if requestID == "" {
		return true
	}
	if ix.decided[requestID] {
		return false
	}
	m.remember(ix, requestID)
	return true
}

// remember keeps the latest decided request ids, oldest dropped first.
func (m *Machine) remember(ix *zoneIndex, requestID string) {
	z := ix.z
	z.Decided = append(z.Decided, requestID)
	ix.decided[requestID] = true
	if ix.changed != nil {
		ix.changed.header = true
	}
	if n := len(z.Decided) - m.cfg.DecidedMemory; n > 0 {
		for _, id := range z.Decided[:n] {
			delete(ix.decided, id)
		}
		// Sliced off, not moved down: the next append that finds the
		// array full copies the ids once, instead of every decision.
		z.Decided = z.Decided[n:]
	}
}

// plannerName is the offering's planner, else vm.deployment.planner of the
// request's zone.
func (m *Machine) plannerName(req *schemas.PlaceVm) string {
	if req.Offering.DeploymentPlanner != "" {
		return req.Offering.DeploymentPlanner
	}
	return m.settings.String(settings.DeploymentPlanner, req.ZoneID, "", m.cfg.DefaultPlanner)
}

// decided builds the decision naming a host.
func decided(ix *zoneIndex, req *schemas.PlaceVm, hostID, planner string) *schemas.PlacementDecided {
	d := &schemas.PlacementDecided{
		VmID: req.VmID, RequestID: req.RequestID, Epoch: req.Epoch,
		ZoneID: ix.z.ZoneID, HostID: hostID, Planner: planner,
	}
	if i, ok := ix.host[hostID]; ok {
		d.PodID, d.ClusterID = ix.z.Hosts[i].PodID, ix.z.Hosts[i].ClusterID
	}
	d.Volumes, d.Nics = ix.placedVolumes(req), ix.placedNics(req)
	return d
}

// placedVolumes are the request's volumes with the pools their claims
// hold, so a repeated request is answered as the first was.
func (ix *zoneIndex) placedVolumes(req *schemas.PlaceVm) []schemas.Volume {
	if len(req.Volumes) == 0 {
		return nil
	}
	vs := slices.Clone(req.Volumes)
	for k := range vs {
		c, ok := ix.claimOf(vs[k].VolumeID)
		if !ok || c.VmID != req.VmID {
			continue
		}
		vs[k].PoolID, vs[k].SizeMB = c.PoolID, max(vs[k].SizeMB, c.SizeMB)
		if i, ok := ix.pool[c.PoolID]; ok {
			vs[k].PoolPath = ix.z.Pools[i].Path
		}
	}
	return vs
}

// placedNics are the request's NICs with the addresses their claims hold.
func (ix *zoneIndex) placedNics(req *schemas.PlaceVm) []schemas.Nic {
	if len(req.Nics) == 0 {
		return nil
	}
	ns := slices.Clone(req.Nics)
	for k := range ns {
		p, ok := ix.nic[ns[k].NicID]
		if !ok || ix.z.Nics[p].VmID != req.VmID {
			continue
		}
		c := ix.z.Nics[p]
		ns[k].NetworkID, ns[k].IP, ns[k].MAC = c.NetworkID, c.IP, c.MAC
		if i, ok := ix.network[c.NetworkID]; ok {
			ns[k].Gateway, ns[k].Cidr = ix.z.Networks[i].Gateway, ix.z.Networks[i].Cidr
		}
	}
	return ns
}

func failed(req *schemas.PlaceVm, reason, detail string) *schemas.PlacementFailed {
	return &schemas.PlacementFailed{VmID: req.VmID, RequestID: req.RequestID, Epoch: req.Epoch, Reason: reason, Detail: detail}
}
