package lease

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// TestCalendarProperties drives the machine with random lease creates,
// updates and deletes, host failures and recoveries, VM allocations and
// releases and the passing of time, and checks after every input:
//
//   - no host is held by two leases in overlapping windows;
//   - a host newly given to a lease is reservable at that moment, runs no
//     other project's VM, and no host that would have fit it (reservable,
//     with the properties, free over the lease's window, not the lease's
//     already) runs a better mix of VMs: none before the lease project's
//     only;
//   - a lease a user created is no longer than the policy's maximum and
//     leaves its project within the quota (an admin's may exceed both);
//   - degraded is exactly "some reservation has missing_resources or
//     resources_changed"; resources_changed never clears; missing_resources
//     clears only with an "updated" notification of that lease;
//   - placement, applying the copies it is sent with its own rule, holds
//     every active lease's hosts for that lease, and nothing for a lease
//     that does not dedicate them;
//   - at the end of each random batch, the zone assembled from the parts
//     the machine handed out equals the zone (checkParts), and a third of
//     the time the machine goes on from the assembled zone;
//
// and at the end, once every window and stop deadline has passed, that
// every lease is TERMINATED, DELETED or ERROR with a reason.
func TestCalendarProperties(t *testing.T) {
	seeds := 50
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProperty(t, seed) })
	}
}

// placementView applies a copy the way processors/placement does (its
// contract, docs/design.md §8): hosts of active reservations while the lease is
// ACTIVE or UPDATING are held for it; every other host of the lease is freed.
func placementView(view map[string]string, l *schemas.LeaseStatusChanged) {
	held := map[string]bool{}
	if l.Status == Active || l.Status == Updating {
		for _, r := range l.Reservations {
			if r.Status == ResActive {
				for _, h := range r.Hosts {
					held[h] = true
				}
			}
		}
	}
	for h, id := range view {
		if id == l.LeaseID && !held[h] {
			delete(view, h)
		}
	}
	for h := range held {
		view[h] = l.LeaseID
	}
}

// mix names which VMs host runs, as the preference sees them for project.
func mix(z *schemas.LeaseZoneRecord, host, project string) string {
	own, other := false, false
	for _, v := range z.Vms {
		if v.HostID == host {
			own, other = own || v.Account == project, other || v.Account != project
		}
	}
	switch {
	case other:
		return "shared"
	case own:
		return "own"
	}
	return "empty"
}

// betterFit returns a host that would have fit reservation r of lease l
// (given h just now) and runs a better mix of VMs than h, or "".
func betterFit(z *schemas.LeaseZoneRecord, l *schemas.LeaseRecord, r *schemas.Reservation, h string) string {
	rank := map[string]int{"empty": 0, "own": 1, "shared": 2}
	mine := leaseHosts(l)
	for _, g := range z.Hosts {
		if mine[g.HostID] || !g.Reservable || rank[mix(z, g.HostID, l.Project)] >= rank[mix(z, h, l.Project)] {
			continue
		}
		ok := true
		for k, v := range r.HostProperties {
			ok = ok && g.Properties[k] == v
		}
		for _, o := range z.Leases {
			if o.LeaseID != l.LeaseID && holds(o.Status) && o.Start < l.End && l.Start < o.End && leaseHosts(&o)[g.HostID] {
				ok = false
			}
		}
		if ok {
			return g.HostID
		}
	}
	return ""
}

// checkPolicy holds a lease a user just created to the policy: no longer
// than the maximum, and its project's leases, it included, hold no more
// host time from now on than the quota.
func checkPolicy(t *testing.T, what string, p Policy, z *schemas.LeaseZoneRecord, l *schemas.LeaseStatusChanged, now int64) {
	t.Helper()
	if l.End-l.Start > p.MaxLength.Milliseconds() {
		t.Fatalf("%s: %s created %v long, over %v", what, l.LeaseID, time.Duration(l.End-l.Start)*time.Millisecond, p.MaxLength)
	}
	var used int64
	for _, o := range z.Leases {
		if o.Project != l.Project || !holds(o.Status) || o.End <= now {
			continue
		}
		for _, r := range o.Reservations {
			used += int64(len(r.Hosts)) * (o.End - max(o.Start, now))
		}
	}
	if used > p.HostHours*int64(time.Hour/time.Millisecond) {
		t.Fatalf("%s: %s created; %s's leases hold %v of host time, over the quota of %d host-hours",
			what, l.LeaseID, l.Project, time.Duration(used)*time.Millisecond, p.HostHours)
	}
}

func runProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cfg := DefaultConfig()
	cfg.StopTimeout = 10 * time.Minute
	// Limits the random leases (10 to 190 minutes, 1 to 6 hosts) meet often.
	cfg.Policy = Policy{MaxLength: 150 * time.Minute, HostHours: 6}
	m := New(cfg)
	var z *schemas.LeaseZoneRecord
	now := time.Duration(0)
	hosts := []string{"h1", "h2", "h3", "h4", "h5", "h6"}
	projects := []string{"acme", "bolt"}
	view := map[string]string{}
	seq := 0
	leaseIDs := []string{}
	admins := map[string]bool{} // leases an admin created

	snapshot := func() map[string]schemas.LeaseRecord {
		out := map[string]schemas.LeaseRecord{}
		if z == nil {
			return out
		}
		for _, l := range z.Leases {
			l.Reservations = slices.Clone(l.Reservations)
			for i := range l.Reservations {
				l.Reservations[i].Hosts = slices.Clone(l.Reservations[i].Hosts)
			}
			out[l.LeaseID] = l
		}
		return out
	}
	check := func(what string, before map[string]schemas.LeaseRecord, out []schemas.Record) {
		t.Helper()
		updated := map[string]bool{}
		for _, r := range out {
			if v, ok := r.Value.(*schemas.LeaseStatusChanged); ok {
				if r.Topic == schemas.TopicPlacementRequests {
					placementView(view, v)
				} else if v.Event == "updated" {
					updated[v.LeaseID] = true
				}
			}
		}
		if z == nil {
			return
		}
		for _, r := range out {
			if v, ok := r.Value.(*schemas.LeaseStatusChanged); ok && r.Topic == schemas.TopicLeaseEvents && v.Event == "created" && !admins[v.LeaseID] {
				checkPolicy(t, what, cfg.Policy, z, v, t0.Add(now).UnixMilli())
			}
		}
		type held struct {
			lease    string
			from, to int64
		}
		byHost := map[string][]held{}
		reservable := map[string]bool{}
		for _, h := range z.Hosts {
			reservable[h.HostID] = h.Reservable
		}
		for _, l := range z.Leases {
			b, existed := before[l.LeaseID]
			old := map[string]bool{}
			if existed {
				for _, r := range b.Reservations {
					for _, h := range r.Hosts {
						old[h] = true
					}
				}
			}
			if l.Degraded != degraded(&l) {
				t.Fatalf("%s: %s degraded=%v but reservations %+v", what, l.LeaseID, l.Degraded, l.Reservations)
			}
			for i, r := range l.Reservations {
				if existed {
					br := b.Reservations[i]
					if br.ResourcesChanged && !r.ResourcesChanged {
						t.Fatalf("%s: %s resources_changed cleared", what, r.ID)
					}
					if br.MissingResources && !r.MissingResources && !updated[l.LeaseID] {
						t.Fatalf("%s: %s missing_resources cleared without an update", what, r.ID)
					}
				}
				if !holds(l.Status) {
					continue
				}
				for _, h := range r.Hosts {
					if !old[h] && !reservable[h] {
						t.Fatalf("%s: %s was given host %s, which is not reservable", what, l.LeaseID, h)
					}
					if !old[h] && mix(z, h, l.Project) == "shared" {
						t.Fatalf("%s: %s was given %s, which runs another project's VM", what, l.LeaseID, h)
					}
					if !old[h] {
						if g := betterFit(z, &l, &r, h); g != "" {
							t.Fatalf("%s: %s was given %s (%s) while %s (%s) fit", what, l.LeaseID, h,
								mix(z, h, l.Project), g, mix(z, g, l.Project))
						}
					}
					byHost[h] = append(byHost[h], held{l.LeaseID, l.Start, l.End})
				}
			}
			if l.Status == Active {
				for _, h := range dedicated(&l) {
					if view[h] != l.LeaseID {
						t.Fatalf("%s: active %s holds %s but placement has it for %q", what, l.LeaseID, h, view[h])
					}
				}
			}
		}
		for h, ws := range byHost {
			for i := range ws {
				for j := i + 1; j < len(ws); j++ {
					if ws[i].from < ws[j].to && ws[j].from < ws[i].to {
						t.Fatalf("%s: host %s double-booked by %s and %s", what, h, ws[i].lease, ws[j].lease)
					}
				}
			}
		}
		for h, id := range view {
			l := func() *schemas.LeaseRecord {
				for i := range z.Leases {
					if z.Leases[i].LeaseID == id {
						return &z.Leases[i]
					}
				}
				return nil
			}()
			if l == nil || !slices.Contains(l.Dedicated, h) {
				t.Fatalf("%s: placement holds %s for %s, which does not dedicate it", what, h, id)
			}
		}
	}
	// The zone goes to a parts log as the runtime writes it: after a batch
	// of one to six inputs, a third of the batches followed by a restart
	// from the log (checkParts). The batches and the monitoring mode,
	// which moves the next poll, come from a source of their own, so the
	// inputs are the same with or without them.
	batches := rand.New(rand.NewPCG(seed, 11))
	log, inBatch := testkit.PartsLog{}, 0
	endBatch := func() {
		t.Helper()
		if inBatch++; z != nil && inBatch >= 1+batches.IntN(6) {
			z, inBatch = checkParts(t, m, log, z, batches.IntN(3) == 0), 0
		}
		if batches.IntN(20) == 0 {
			mode := []string{settings.MonitorPush, settings.MonitorPoll, settings.MonitorBoth}[batches.IntN(3)]
			if err := m.Configure(&schemas.SettingChanged{Name: settings.LeaseMonitorType, Scope: "zone", ScopeID: zone, Value: mode}); err != nil {
				t.Fatal(err)
			}
		}
	}
	step := func(v any) {
		before := snapshot()
		var out []schemas.Record
		z, out = m.Step(z, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: v}, t0.Add(now))
		check(fmt.Sprintf("@%v %T %+v", now, v, v), before, out)
		endBatch()
	}
	advance := func(to time.Duration) {
		for {
			w := m.Wake(z)
			if w.IsZero() || w.After(t0.Add(to)) {
				break
			}
			now = w.Sub(t0)
			before := snapshot()
			var out []schemas.Record
			z, out = m.Tick(z, zone, w)
			check(fmt.Sprintf("tick @%v", now), before, out)
			endBatch()
		}
		now = to
	}
	hostStatus := func(h string, up bool) {
		st := "Up"
		if !up {
			st = []string{"Down", "Disconnected"}[rng.IntN(2)]
		}
		step(&schemas.HostStatus{HostID: h, ZoneID: zone, Status: st, ResourceState: "Enabled", Reservable: up,
			Properties: map[string]string{"rack": fmt.Sprint(h[1] % 2)}})
	}
	for _, h := range hosts {
		hostStatus(h, true)
	}
	specs := func() []schemas.ReservationSpec {
		var out []schemas.ReservationSpec
		for range 1 + rng.IntN(2) {
			lo := int32(1 + rng.IntN(2))
			s := schemas.ReservationSpec{MinHosts: lo, MaxHosts: lo + int32(rng.IntN(2))}
			if rng.IntN(4) == 0 {
				s.HostProperties = map[string]string{"rack": fmt.Sprint(rng.IntN(2))}
			}
			out = append(out, s)
		}
		return out
	}
	vms := 0
	for range 200 {
		seq++
		id := fmt.Sprintf("c%d", seq)
		switch k := rng.IntN(10); {
		case k < 3:
			lid := fmt.Sprintf("l%d", len(leaseIDs)+1)
			leaseIDs = append(leaseIDs, lid)
			start := now + time.Duration(rng.IntN(180))*time.Minute
			admins[lid] = rng.IntN(5) == 0
			step(&schemas.CreateLease{CommandID: id, LeaseID: lid, ZoneID: zone, Project: projects[rng.IntN(2)],
				Start: ms(start), End: ms(start + time.Duration(10+rng.IntN(180))*time.Minute), Reservations: specs(),
				Admin: admins[lid]})
		case k < 5 && len(leaseIDs) > 0:
			u := &schemas.UpdateLease{CommandID: id, LeaseID: leaseIDs[rng.IntN(len(leaseIDs))], ZoneID: zone}
			switch rng.IntN(3) {
			case 0:
				u.End = ms(now + time.Duration(rng.IntN(240))*time.Minute)
			case 1:
				u.Start = ms(now + time.Duration(rng.IntN(120))*time.Minute)
			}
			if l := func() *schemas.LeaseRecord {
				for i := range z.Leases {
					if z.Leases[i].LeaseID == u.LeaseID {
						return &z.Leases[i]
					}
				}
				return nil
			}(); l != nil && rng.IntN(2) == 0 {
				for range l.Reservations {
					lo := int32(1 + rng.IntN(2))
					u.Reservations = append(u.Reservations, schemas.ReservationSpec{MinHosts: lo, MaxHosts: lo + int32(rng.IntN(2))})
				}
			}
			step(u)
		case k < 6 && len(leaseIDs) > 0:
			step(&schemas.DeleteLease{CommandID: id, LeaseID: leaseIDs[rng.IntN(len(leaseIDs))], ZoneID: zone})
		case k < 7:
			hostStatus(hosts[rng.IntN(len(hosts))], rng.IntN(2) == 0)
		case k < 8:
			vms++
			step(&schemas.CapacityAllocated{ZoneID: zone, VmID: fmt.Sprintf("vm%d", vms), HostID: hosts[rng.IntN(len(hosts))],
				Account: projects[rng.IntN(2)]})
		case k < 9 && vms > 0:
			v := fmt.Sprintf("vm%d", 1+rng.IntN(vms))
			for _, a := range z.Vms {
				if a.VmID == v {
					step(&schemas.CapacityReleased{ZoneID: zone, VmID: v, HostID: a.HostID})
					break
				}
			}
		default:
			advance(now + time.Duration(rng.IntN(40))*time.Minute)
		}
	}
	// Past every window and stop deadline (well within the retention).
	advance(now + 8*time.Hour)
	for _, l := range z.Leases {
		switch {
		case l.Status == Terminated || l.Status == Deleted:
		case l.Status == Error && l.Reason != "":
		default:
			t.Fatalf("lease %s ended %s reason=%q", l.LeaseID, l.Status, l.Reason)
		}
	}
	if len(view) != 0 {
		t.Fatalf("placement still holds %v after every lease ended", view)
	}
}
