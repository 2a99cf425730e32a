package placement

import (
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Reasons of PlacementFailed.
const (
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonNoReservableHost     = "NoReservableHost"
	ReasonUnknownPlanner       = "UnknownPlanner"
	ReasonUnsupported          = "Unsupported"
)

// place is the planning manager: it answers one PlaceVm, claiming capacity
// at most once per request.
func (m *Machine) place(z *schemas.ZoneRecord, req *schemas.PlaceVm, now time.Time, hdr map[string]string) []schemas.Record {
	if i := allocationOf(z, req.VmID); i >= 0 && z.Allocations[i].RequestID == req.RequestID {
		// A redelivered or repeated request: answer as before, claim nothing.
		return []schemas.Record{signal(req.VmID, decided(z, req, z.Allocations[i].HostID, m.plannerName(req)), hdr)}
	}
	if slices.Contains(z.Decided, req.RequestID) {
		// Decided once, and the VM has released that claim since: the
		// request is stale and answering it again could only mislead.
		return nil
	}
	p, ok := m.planners[m.plannerName(req)]
	if !ok {
		return []schemas.Record{signal(req.VmID, failed(req, ReasonUnknownPlanner), hdr)}
	}

	var out []schemas.Record
	// A VM holding a claim from another request (a retried job, a start
	// after a failed one) gives it back first, so a VM never counts twice.
	for _, ev := range release(z, req.VmID, "", req.RequestID, now) {
		out = append(out, event(z.ZoneID, ev, hdr))
	}

	i, reason := m.choose(z, p, req)
	if i < 0 {
		return append(out, signal(req.VmID, failed(req, reason), hdr))
	}
	if ev := reserve(z, i, p, req.Account, now); ev != nil {
		out = append(out, event(z.ZoneID, ev, hdr))
	}
	out = append(out, event(z.ZoneID, allocate(z, i, req, now), hdr))
	m.remember(z, req.RequestID)
	return append(out, signal(req.VmID, decided(z, req, z.Hosts[i].HostID, p.Name()), hdr))
}

// choose returns the index of the first acceptable host in the order the
// planner gives (the asked-for host first), or -1 and why none was.
func (m *Machine) choose(z *schemas.ZoneRecord, p Planner, req *schemas.PlaceVm) (int, string) {
	v := view(z)
	clusters := map[string]Cluster{}
	for _, c := range v.Clusters {
		clusters[c.ID] = c
	}
	var order []string
	if req.HostID != "" {
		order = append(order, req.HostID)
	}
	for _, id := range p.OrderClusters(v, req) {
		for _, h := range clusters[id].Hosts {
			order = append(order, h.HostID)
		}
	}
	for _, id := range order {
		i := hostIndex(z, id)
		if i >= 0 && acceptable(z.Hosts[i], p, req) {
			return i, ""
		}
	}
	if slices.ContainsFunc(z.Hosts, func(h schemas.HostCapacity) bool { return h.Reservable }) {
		return -1, ReasonInsufficientCapacity
	}
	return -1, ReasonNoReservableHost
}

// acceptable holds every rule a host must pass, whatever the planner.
func acceptable(h schemas.HostCapacity, p Planner, req *schemas.PlaceVm) bool {
	return h.Reservable &&
		!slices.Contains(req.AvoidHosts, h.HostID) &&
		hasTags(h.Tags, req.Offering.HostTags) &&
		fits(h, req.Offering.CPU, req.Offering.MemoryMB) &&
		reservationAllows(h, p, req.Account)
}

func hasTags(have, want []string) bool {
	for _, t := range want {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}

// remember keeps the latest decided request ids, oldest dropped first.
func (m *Machine) remember(z *schemas.ZoneRecord, requestID string) {
	z.Decided = append(z.Decided, requestID)
	if n := len(z.Decided) - m.cfg.DecidedMemory; n > 0 {
		z.Decided = slices.Delete(z.Decided, 0, n)
	}
}

// plannerName is the offering's planner, else vm.deployment.planner.
func (m *Machine) plannerName(req *schemas.PlaceVm) string {
	if req.Offering.DeploymentPlanner != "" {
		return req.Offering.DeploymentPlanner
	}
	return m.cfg.DefaultPlanner
}

// decided builds the decision naming a host.
func decided(z *schemas.ZoneRecord, req *schemas.PlaceVm, hostID, planner string) *schemas.PlacementDecided {
	d := &schemas.PlacementDecided{
		VmID: req.VmID, RequestID: req.RequestID, Epoch: req.Epoch,
		ZoneID: z.ZoneID, HostID: hostID, Planner: planner,
	}
	if i := hostIndex(z, hostID); i >= 0 {
		d.PodID, d.ClusterID = z.Hosts[i].PodID, z.Hosts[i].ClusterID
	}
	return d
}

func failed(req *schemas.PlaceVm, reason string) *schemas.PlacementFailed {
	return &schemas.PlacementFailed{VmID: req.VmID, RequestID: req.RequestID, Epoch: req.Epoch, Reason: reason}
}
