package placement

import (
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// Lease statuses during which a lease's hosts are dedicated to its project.
var leaseHolds = []string{"ACTIVE", "UPDATING"}

// applyLease records which hosts an active lease dedicates to its project
// (Blazar's dedication, docs/design.md §8): such hosts take VMs of that project
// only. Hosts the lease no longer holds (swapped by healing, or the lease
// ended) are freed. VMs already running on a host are not moved.
func (m *Machine) applyLease(z *schemas.ZoneRecord, l *schemas.LeaseStatusChanged) {
	held := map[string]bool{}
	if slices.Contains(leaseHolds, l.Status) {
		for _, r := range l.Reservations {
			if r.Status != "active" {
				continue
			}
			for _, id := range r.Hosts {
				held[id] = true
			}
		}
	}
	ix := m.index(z)
	for i := range z.Hosts {
		h := &z.Hosts[i]
		id, project := h.LeaseID, h.LeaseProject
		switch {
		case held[h.HostID]:
			h.LeaseID, h.LeaseProject = l.LeaseID, l.Project
		case h.LeaseID == l.LeaseID:
			h.LeaseID, h.LeaseProject = "", ""
		}
		if h.LeaseID != id || h.LeaseProject != project {
			ix.hostChanged(h.HostID)
		}
	}
}
