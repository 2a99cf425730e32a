package postgres

import (
	"testing"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestProjectorCapacity projects hosts, claims, a reservation and its
// release, and reads them back as the gateway does (readmodel).
func TestProjectorCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and the embedded broker")
	}
	kcfg, dsn := testBroker(t), testDB(t)
	p := newProducer(t, kcfg)
	const at = int64(1_777_000_000_000)
	for _, h := range []struct{ id, cluster string }{{"h1", "c1"}, {"h2", "c1"}, {"h3", "c2"}} {
		p.send(schemas.TopicHostStatus, h.id, &schemas.HostStatus{HostID: h.id, ZoneID: "z1", PodID: "p1", ClusterID: h.cluster,
			Status: "Up", ResourceState: "Enabled", Reservable: h.id != "h2", CPU: 4, MemoryMB: 8192, CPUOvercommit: 2, MemOvercommit: 1, UpdatedAt: at})
	}
	// h4 reports no over-commit ratios: capacity counts placement's defaults.
	p.send(schemas.TopicHostStatus, "h4", &schemas.HostStatus{HostID: "h4", ZoneID: "z1", PodID: "p1", ClusterID: "c2",
		Status: "Up", ResourceState: "Enabled", Reservable: true, CPU: 4, MemoryMB: 8192, UpdatedAt: at})
	ev := func(v any) { p.send(schemas.TopicPlacementEvents, "z1", v) }
	ev(&schemas.HostReserved{ZoneID: "z1", HostID: "h1", Planner: "ImplicitDedicationPlanner", ResourceUsage: "Dedicated", Account: "acme", At: at})
	ev(&schemas.CapacityAllocated{ZoneID: "z1", HostID: "h1", VmID: "vm1", Account: "acme", CPU: 3, MemoryMB: 2048,
		HostUsedCPU: 3, HostUsedMemory: 2048, RequestID: "r1", At: at})
	ev(&schemas.HostReserved{ZoneID: "z1", HostID: "h3", Planner: "FirstFitPlanner", ResourceUsage: "Shared", At: at})
	ev(&schemas.CapacityAllocated{ZoneID: "z1", HostID: "h3", VmID: "vm2", Account: "bolt", CPU: 2, MemoryMB: 1024,
		HostUsedCPU: 2, HostUsedMemory: 1024, RequestID: "r2", At: at})
	ev(&schemas.CapacityReleased{ZoneID: "z1", HostID: "h3", VmID: "vm2", CPU: 2, MemoryMB: 1024, RequestID: "x2", At: at + 1})
	ev(&schemas.HostReservationReleased{ZoneID: "z1", HostID: "h3", Reason: "no VMs for 5m0s", At: at + 2})
	p.send(schemas.TopicCatalog, "o1", &schemas.ServiceOffering{Offering: schemas.Offering{ID: "o1", Name: "ded", CPU: 1, MemoryMB: 512,
		DeploymentPlanner: "ImplicitDedicationPlanner", PlannerMode: "Preferred"}, CreatedAt: at})
	startProjector(t, Config{Kafka: kcfg, DSN: dsn}, nil)
	waitApplied(t, dsn, DefaultGroup, p)

	r, err := readmodel.NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cs, err := r.ZoneCapacity(t.Context(), "z1")
	if err != nil {
		t.Fatal(err)
	}
	want := []readmodel.ClusterCapacity{
		{PodID: "p1", ClusterID: "c1", Hosts: 2, ReservableHosts: 1, CPU: 16, UsedCPU: 3, FreeCPU: 5,
			MemoryMB: 16384, UsedMemoryMB: 2048, FreeMemoryMB: 6144, ReservedHosts: 1, Dedicated: 1},
		{PodID: "p1", ClusterID: "c2", Hosts: 2, ReservableHosts: 2, CPU: 8 + 4*schemas.DefaultCPUOvercommit, UsedCPU: 0,
			FreeCPU: 8 + 4*schemas.DefaultCPUOvercommit, MemoryMB: 8192 + 8192*schemas.DefaultMemOvercommit, UsedMemoryMB: 0,
			FreeMemoryMB: 8192 + 8192*schemas.DefaultMemOvercommit},
	}
	if len(cs) != len(want) || cs[0] != want[0] || cs[1] != want[1] {
		t.Fatalf("capacity\n got %+v\nwant %+v", cs, want)
	}
	hp, err := r.HostPlacement(t.Context(), "h1")
	if err != nil {
		t.Fatal(err)
	}
	if hp.Planner != "ImplicitDedicationPlanner" || hp.ReservedFor != "acme" || len(hp.Allocations) != 1 || hp.Allocations[0].VmID != "vm1" {
		t.Fatalf("h1 placement %+v", hp)
	}
	if hp, err := r.HostPlacement(t.Context(), "h3"); err != nil || hp.Planner != "" || len(hp.Allocations) != 0 {
		t.Fatalf("h3 after release: %+v %v", hp, err)
	}
	if o, err := r.Offering(t.Context(), "ded"); err != nil || o.PlannerMode != "Preferred" {
		t.Fatalf("offering: %+v %v", o, err)
	}
}
