package roles

import (
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// TestLeaseHostCrashHealsAndHA crashes a sim host of an active lease
// through the real runtime (host processor with the sim agent's fencing,
// VM processor, placement and the lease processor on kfake).
//
// Four hosts with 8 GiB each: bolt's 8 GiB VM fills h1 before acme leases
// two hosts, so the lease takes the empty h2 and h3 over h1 (a host shared
// with another project comes last). Acme's HA VM lands on h2 (h1 is full)
// and acme's 8 GiB VM fills h3. h2 crashes: the lease heals (degraded,
// resources_changed) with h4, the empty host, over h1, which runs bolt's
// VM; fencing says Down and HA restarts acme's VM on h4, the only host with
// room, which the lease now dedicates to acme: bolt's next VM finds no host.
//
// Placement's first fit has no pull towards a project's lease hosts
// (dedication only keeps other projects off them), so the restart lands on
// the replacement here because every other host is full; with room on h1 it
// would go there.
func TestLeaseHostCrashHealsAndHA(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	ctx := t.Context()
	kcfg, _ := testkit.Kafka(t)
	timelineOnFailure(t, kcfg, time.Now())
	cl := client(t, kcfg)
	log := slog.New(slog.DiscardHandler)
	o := Options{Kafka: kcfg, InstanceID: "a", Logger: log}
	set := Settings{PingInterval: time.Second}
	startProcessors(t, o, set, engine.SystemClock{}, ProcessorKinds...)
	const zone = "zone-1"
	d, err := sim.New(sim.Config{Layout: sim.Layout{Prefix: "h", Zone: zone, Pods: 1, ClustersPerPod: 1, HostsPerCluster: 4, CPU: 16, MemoryMB: 8192}})
	if err != nil {
		t.Fatal(err)
	}
	go agent.New(agent.Config{ID: "test", Kafka: kcfg, PingInterval: time.Second, Logger: log}, d).Run(ctx)
	h := func(n string) string { return "h-p1-c1-h" + n }
	start := time.Now()

	// The lease processor knows the four hosts reservable: their latest
	// parts on its changelog say so.
	reservable := map[string]bool{}
	waitFor(t, kcfg, schemas.TopicLeaseState, func(r schemas.Record) bool {
		if p, ok := r.Value.(*schemas.LeaseZoneHost); ok {
			reservable[p.Host.HostID] = p.Host.Reservable
		}
		return len(reservable) == 4 && !slices.Contains(slices.Collect(maps.Values(reservable)), false)
	})

	deploy := func(vm, acct string, memMB int64, ha bool) string {
		t.Helper()
		produce(t, cl, schemas.Record{Topic: schemas.TopicVmCommands, Key: vm, Value: &schemas.Deploy{
			VmCommand: schemas.VmCommand{CommandID: "deploy-" + vm, VmID: vm, Account: acct, Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()},
			Name:      vm, ZoneID: zone, Offering: schemas.Offering{ID: "off", Name: "off", CPU: 1, MemoryMB: memMB}, HA: ha}})
		var host string
		waitFor(t, kcfg, schemas.TopicVmEvents, func(r schemas.Record) bool {
			switch v := r.Value.(type) {
			case *schemas.VmStateChanged:
				if r.Key == vm && v.HostID != "" {
					host = v.HostID
				}
			case *schemas.JobSucceeded:
				return v.JobID == "deploy-"+vm
			case *schemas.JobFailed:
				if v.JobID == "deploy-"+vm {
					t.Fatalf("deploy %s failed: %+v", vm, v)
				}
			}
			return false
		})
		return host
	}
	if got := deploy("vm-bolt", "bolt", 8192, false); got != h("1") {
		t.Fatalf("bolt's VM on %q, want %s (first fit)", got, h("1"))
	}
	// The lease processor has seen bolt's VM before acme asks for hosts.
	waitFor(t, kcfg, schemas.TopicLeaseState, func(r schemas.Record) bool {
		v, ok := r.Value.(*schemas.LeaseZoneVm)
		return ok && v.VmID == "vm-bolt"
	})

	produce(t, cl, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: &schemas.CreateLease{
		CommandID: "lease-create-1", LeaseID: "lease-1", ZoneID: zone, Project: "acme", Name: "lab",
		End: time.Now().Add(time.Hour).UnixMilli(), Reservations: []schemas.ReservationSpec{{MinHosts: 2, MaxHosts: 2}}}})
	leaseEvent := func(event string, ok func(*schemas.LeaseStatusChanged) bool) *schemas.LeaseStatusChanged {
		t.Helper()
		var got *schemas.LeaseStatusChanged
		waitFor(t, kcfg, schemas.TopicLeaseEvents, func(r schemas.Record) bool {
			v, is := r.Value.(*schemas.LeaseStatusChanged)
			if is && v.LeaseID == "lease-1" && v.Event == event && ok(v) {
				got = v
			}
			return got != nil
		})
		return got
	}
	started := leaseEvent("started", func(v *schemas.LeaseStatusChanged) bool { return v.Status == "ACTIVE" })
	if hosts := started.Reservations[0].Hosts; !slices.Equal(hosts, []string{h("2"), h("3")}) {
		t.Fatalf("lease on %v, want the empty %s and %s before bolt's %s", hosts, h("2"), h("3"), h("1"))
	}

	crashed := deploy("vm-ha", "acme", 1024, true)
	if crashed != h("2") {
		t.Fatalf("acme's HA VM on %q, want %s (h1 is full)", crashed, h("2"))
	}
	if got := deploy("vm-fill", "acme", 8192, false); got != h("3") {
		t.Fatalf("acme's 8 GiB VM on %q, want %s", got, h("3"))
	}
	// Let a ping list the HA VM, then crash its host.
	time.Sleep(1500 * time.Millisecond)
	crashAt := time.Now()
	if err := d.CrashHost(crashed); err != nil {
		t.Fatal(err)
	}

	healed := leaseEvent("healed", func(v *schemas.LeaseStatusChanged) bool { return v.Status == "ACTIVE" })
	r := healed.Reservations[0]
	if !healed.Degraded || !r.ResourcesChanged || r.MissingResources || !slices.Equal(r.Hosts, []string{h("3"), h("4")}) {
		t.Fatalf("healed lease degraded=%v reservation %+v; want degraded, resources_changed, hosts %s,%s (the empty host over bolt's)",
			healed.Degraded, r, h("3"), h("4"))
	}
	t.Logf("lease healed %v after the crash", time.Since(crashAt).Round(100*time.Millisecond))

	var restarted string
	waitFor(t, kcfg, schemas.TopicVmEvents, func(rec schemas.Record) bool {
		v, ok := rec.Value.(*schemas.VmStateChanged)
		if ok && rec.Key == "vm-ha" && v.VmState == "Active" && v.HostID != "" && v.HostID != crashed {
			restarted = v.HostID
		}
		return restarted != ""
	})
	if restarted != h("4") {
		t.Fatalf("vm-ha restarted on %s, want the replacement %s", restarted, h("4"))
	}
	t.Logf("vm-ha Active on the replacement %s %v after the crash", restarted, time.Since(crashAt).Round(100*time.Millisecond))

	// The replacement is acme's: bolt's next VM has nowhere to go.
	produce(t, cl, schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm-bolt-2", Value: &schemas.Deploy{
		VmCommand: schemas.VmCommand{CommandID: "deploy-vm-bolt-2", VmID: "vm-bolt-2", Account: "bolt", Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()},
		Name:      "vm-bolt-2", ZoneID: zone, Offering: schemas.Offering{ID: "off", Name: "off", CPU: 1, MemoryMB: 1024}}})
	waitFor(t, kcfg, schemas.TopicVmEvents, func(rec schemas.Record) bool {
		switch v := rec.Value.(type) {
		case *schemas.JobSucceeded:
			if v.JobID == "deploy-vm-bolt-2" {
				t.Fatal("bolt's VM found a host, but every free one is acme's lease")
			}
		case *schemas.JobFailed:
			return v.JobID == "deploy-vm-bolt-2"
		}
		return false
	})
	t.Logf("whole test %v", time.Since(start).Round(100*time.Millisecond))
}
