package placement

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

func pool(id, scope string, capMB int64) *schemas.UpdateStoragePool {
	return &schemas.UpdateStoragePool{RequestID: "q-" + id, PoolID: id, ZoneID: "z1", Name: id, Scope: scope, Path: "/pools/" + id, CapacityMB: capMB}
}

func network(id, cidr, gw string) *schemas.UpdateNetwork {
	return &schemas.UpdateNetwork{RequestID: "q-" + id, NetworkID: id, ZoneID: "z1", Name: id, Cidr: cidr, Gateway: gw}
}

func withStorage(r *schemas.PlaceVm, sizeMB int64, networkID string) *schemas.PlaceVm {
	if sizeMB > 0 {
		r.Volumes = []schemas.Volume{{VolumeID: r.VmID + "-root", Kind: schemas.VolumeRoot, SizeMB: sizeMB}}
	}
	if networkID != "" {
		r.Nics = []schemas.Nic{{NicID: r.VmID + "-eth0", NetworkID: networkID}}
	}
	return r
}

func TestHundredVMsOnOneNetworkGetDistinctAddresses(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := run(t, m, hostUp("h1", "c1", 64, 1<<20), network("n1", "10.0.0.0/24", "10.0.0.1"))
	ips, macs := map[string]bool{}, map[string]bool{}
	for i := range 100 {
		var out []schemas.Record
		z, out = m.Step(z, rec(withStorage(placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 0, 0), 0, "n1")), t0)
		ds := only[*schemas.PlacementDecided](out)
		if len(ds) != 1 || len(ds[0].Nics) != 1 {
			t.Fatalf("vm%d: %+v", i, out)
		}
		n := ds[0].Nics[0]
		if ips[n.IP] || macs[n.MAC] || n.IP == "10.0.0.1" || n.Gateway != "10.0.0.1" || n.Cidr != "10.0.0.0/24" {
			t.Fatalf("vm%d got %+v; given before: %d addresses", i, n, len(ips))
		}
		ips[n.IP], macs[n.MAC] = true, true
	}
	checkInvariants(t, m, z)
	if n := z.Networks[0]; n.Allocated != 100 || n.Size != 253 {
		t.Fatalf("network after 100 VMs: %+v", n)
	}
}

func TestPoolIsNeverOverfilled(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := run(t, m, hostUp("h1", "c1", 64, 1<<20), hostUp("h2", "c2", 64, 1<<20), pool("p1", schemas.PoolScopeZone, 4500))
	decided := 0
	for i := range 10 {
		var out []schemas.Record
		z, out = m.Step(z, rec(withStorage(placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 1, 128), 1000, "")), t0)
		checkInvariants(t, m, z)
		if len(only[*schemas.PlacementDecided](out)) == 1 {
			decided++
			continue
		}
		f := only[*schemas.PlacementFailed](out)
		if len(f) != 1 || f[0].Reason != ReasonStorageUnavailable || !strings.Contains(f[0].Detail, "pool p1 has 500 MiB free") {
			t.Fatalf("vm%d: %+v", i, out)
		}
	}
	if decided != 4 || z.Pools[0].UsedMB != 4000 {
		t.Fatalf("decided %d, pool %+v", decided, z.Pools[0])
	}
}

func TestPoolsArePreferredLocalThenClusterThenZoneThenMostFree(t *testing.T) {
	m := New(DefaultConfig())
	tagged := func(p *schemas.UpdateStoragePool, scope, owner string) *schemas.UpdateStoragePool {
		switch scope {
		case schemas.PoolScopeCluster:
			p.ClusterID = owner
		case schemas.PoolScopeHost:
			p.HostID = owner
		}
		return p
	}
	z, _ := run(t, m, hostUp("h1", "c1", 64, 1<<20),
		pool("zone-small", schemas.PoolScopeZone, 1000), pool("zone-big", schemas.PoolScopeZone, 9000),
		tagged(pool("cluster", schemas.PoolScopeCluster, 2000), schemas.PoolScopeCluster, "c1"),
		tagged(pool("local", schemas.PoolScopeHost, 500), schemas.PoolScopeHost, "h1"))
	want := []string{"local", "cluster", "cluster", "zone-big"}
	for i, sizeMB := range []int64{400, 400, 1500, 1500} {
		var out []schemas.Record
		z, out = m.Step(z, rec(withStorage(placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 1, 128), sizeMB, "")), t0)
		checkInvariants(t, m, z)
		ds := only[*schemas.PlacementDecided](out)
		if len(ds) != 1 || ds[0].Volumes[0].PoolID != want[i] || ds[0].Volumes[0].PoolPath != "/pools/"+want[i] {
			t.Fatalf("volume %d (%d MiB): want pool %s, got %+v", i, sizeMB, want[i], out)
		}
	}
}

func TestMaintenancePoolKeepsItsVolumesTakesNoNewOnes(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := run(t, m, hostUp("h1", "c1", 64, 1<<20), pool("p1", schemas.PoolScopeZone, 4000),
		withStorage(placeReq("r1", "vm1", 1, 128), 1000, ""))
	maint := pool("p1", schemas.PoolScopeZone, 4000)
	maint.RequestID, maint.State = "q-maint", schemas.PoolMaintenance
	z, _ = m.Step(z, rec(maint), t0)
	// The VM restarts with its volume where it is.
	restart := withStorage(placeReq("r2", "vm1", 1, 128), 1000, "")
	restart.Volumes[0].PoolID = "p1"
	z, out := m.Step(z, rec(restart), t0)
	if ds := only[*schemas.PlacementDecided](out); len(ds) != 1 || ds[0].Volumes[0].PoolID != "p1" {
		t.Fatalf("restart on a pool in maintenance: %+v", out)
	}
	z, out = m.Step(z, rec(withStorage(placeReq("r3", "vm2", 1, 128), 1000, "")), t0)
	checkInvariants(t, m, z)
	if f := only[*schemas.PlacementFailed](out); len(f) != 1 || !strings.Contains(f[0].Detail, "pool p1 is Maintenance") {
		t.Fatalf("new volume on a pool in maintenance: %+v", out)
	}
}

func TestPlaceWithStorageIsIdempotent(t *testing.T) {
	m := New(DefaultConfig())
	z, first := run(t, m, hostUp("h1", "c1", 64, 1<<20), pool("p1", schemas.PoolScopeZone, 4000),
		network("n1", "10.0.0.0/24", "10.0.0.1"), withStorage(placeReq("r1", "vm1", 1, 128), 1000, "n1"))
	before := fmt.Sprint(z.Pools, z.Networks, z.Volumes, z.Nics)
	z, again := m.Step(z, rec(withStorage(placeReq("r1", "vm1", 1, 128), 1000, "n1")), t0)
	checkInvariants(t, m, z)
	if len(again) != 1 || !reflect.DeepEqual(only[*schemas.PlacementDecided](first), only[*schemas.PlacementDecided](again)) {
		t.Fatalf("repeat answered differently:\n%+v\n%+v", first, again)
	}
	if after := fmt.Sprint(z.Pools, z.Networks, z.Volumes, z.Nics); after != before {
		t.Fatalf("repeat claimed again:\n%s\n%s", before, after)
	}
}

// TestRestoreRebuildsStorageIndex restores a zone from its changelog
// encoding into a new machine, which must index it from scratch and then
// decide exactly as the machine that built it.
func TestRestoreRebuildsStorageIndex(t *testing.T) {
	m := New(DefaultConfig())
	local := pool("local", schemas.PoolScopeHost, 3000)
	local.HostID = "h2"
	z, _ := run(t, m, hostUp("h1", "c1", 64, 1<<20), hostUp("h2", "c1", 64, 1<<20),
		pool("p1", schemas.PoolScopeZone, 4000), local, network("n1", "10.0.0.0/28", "10.0.0.1"))
	for i := range 6 {
		z, _ = m.Step(z, rec(withStorage(placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 1, 128), 900, "n1")), t0)
	}
	z, _ = m.Step(z, rec(&schemas.ReleaseVm{RequestID: "x1", VmID: "vm1", AllVolumes: true, Nics: true}), t0)
	restored, fresh := testkit.ThroughAvro(t, z), New(DefaultConfig())
	checkInvariants(t, fresh, restored)
	for i := 6; i < 12; i++ {
		req := func() *schemas.PlaceVm {
			return withStorage(placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 1, 128), 900, "n1")
		}
		var want, got []schemas.Record
		z, want = m.Step(z, rec(req()), t0)
		restored, got = fresh.Step(restored, rec(req()), t0)
		checkInvariants(t, fresh, restored)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("vm%d: the restored machine decided\n%+v\nthe original\n%+v", i, got, want)
		}
	}
}

func TestVolumesOnlyChangesNoHostClaim(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := run(t, m, hostUp("h1", "c1", 64, 1<<20), pool("p1", schemas.PoolScopeZone, 4000),
		withStorage(placeReq("r1", "vm1", 1, 128), 1000, ""))
	attach := placeReq("r2", "vm1", 0, 0)
	attach.VolumesOnly, attach.HostID = true, "h1"
	attach.Volumes = []schemas.Volume{{VolumeID: "vm1-data", Kind: schemas.VolumeData, DeviceID: 1, SizeMB: 2000}}
	z, out := m.Step(z, rec(attach), t0)
	checkInvariants(t, m, z)
	if len(only[*schemas.CapacityAllocated](out)) > 0 || len(only[*schemas.CapacityReleased](out)) > 0 {
		t.Fatalf("attach changed host claims: %+v", out)
	}
	if h := host(t, z, "h1"); h.UsedCPU != 1 || z.Pools[0].UsedMB != 3000 {
		t.Fatalf("after attach: host %+v pool %+v", h, z.Pools[0])
	}
	z, again := m.Step(z, rec(attach), t0)
	if len(again) != 1 || !reflect.DeepEqual(only[*schemas.PlacementDecided](out), only[*schemas.PlacementDecided](again)) || z.Pools[0].UsedMB != 3000 {
		t.Fatalf("repeated attach: %+v, pool %+v", again, z.Pools[0])
	}
	attach.RequestID, attach.Volumes[0].VolumeID = "r3", "vm1-data2"
	z, out = m.Step(z, rec(attach), t0)
	checkInvariants(t, m, z)
	if f := only[*schemas.PlacementFailed](out); len(f) != 1 || f[0].Detail != "no pool can take 2000 MiB for vm1-data2: pool p1 has 1000 MiB free" {
		t.Fatalf("attach beyond the pool: %+v", out)
	}
}

func TestPoolRefusals(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := run(t, m, hostUp("h1", "c1", 64, 1<<20), pool("p1", schemas.PoolScopeZone, 4000),
		withStorage(placeReq("r1", "vm1", 1, 128), 1000, ""))
	for _, tc := range []struct {
		name   string
		change func(p *schemas.UpdateStoragePool)
		want   string
	}{
		{"below use", func(p *schemas.UpdateStoragePool) { p.CapacityMB = 999 }, "below the 1000 MiB"},
		{"moved", func(p *schemas.UpdateStoragePool) { p.Scope, p.ClusterID = schemas.PoolScopeCluster, "c1" }, "cannot change while 1 volumes"},
		{"new path", func(p *schemas.UpdateStoragePool) { p.Path = "/elsewhere" }, "cannot change while 1 volumes"},
		{"deleted", func(p *schemas.UpdateStoragePool) { p.Deleted = true }, "1 volumes (1000 MiB) are on the pool"},
		{"no cluster", func(p *schemas.UpdateStoragePool) { p.Scope = schemas.PoolScopeCluster }, "names its cluster_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pool("p1", schemas.PoolScopeZone, 4000)
			p.RequestID = "q-" + tc.name
			tc.change(p)
			before := fmt.Sprint(z.Pools)
			var out []schemas.Record
			z, out = m.Step(z, rec(p), t0)
			checkInvariants(t, m, z)
			c := only[*schemas.StoragePoolChanged](out)
			if len(out) != 1 || len(c) != 1 || !strings.Contains(c[0].Refused, tc.want) || fmt.Sprint(c[0].Pool) != fmt.Sprint(z.Pools[0]) {
				t.Fatalf("want refused %q, got %+v", tc.want, out)
			}
			if after := fmt.Sprint(z.Pools); after != before {
				t.Fatalf("a refusal changed the pool: %s → %s", before, after)
			}
		})
	}
}

// A resize that does not fit the VM's host moves it only to a host that
// reaches its volumes' pools: a volume on host-local storage keeps it in
// place, and the resize fails with the reason.
func TestResizeKeepsVolumesReachable(t *testing.T) {
	m := New(DefaultConfig())
	local := pool("l1", schemas.PoolScopeHost, 4000)
	local.HostID = "h1"
	z, out := run(t, m, hostUp("h1", "c1", 4, 4096), hostUp("h2", "c1", 64, 1<<20), local,
		withStorage(placeReq("r1", "vm1", 2, 2048), 1000, ""))
	if ds := only[*schemas.PlacementDecided](out); len(ds) != 1 || ds[0].HostID != "h1" || ds[0].Volumes[0].PoolID != "l1" {
		t.Fatalf("first placement: %+v", out)
	}
	vols := []schemas.Volume{{VolumeID: "vm1-root", Kind: schemas.VolumeRoot, SizeMB: 1000, PoolID: "l1"}}
	grow := &schemas.ResizeVm{RequestID: "rs1", VmID: "vm1", ZoneID: "z1", Account: "acme", Epoch: 4,
		Offering: schemas.Offering{ID: "o2", Name: "big", CPU: 8, MemoryMB: 8192}, Volumes: vols}
	z, out = m.Step(z, rec(grow), t0)
	checkInvariants(t, m, z)
	if f := only[*schemas.PlacementFailed](out); len(f) != 1 || !strings.Contains(f[0].Detail, "host-local") {
		t.Fatalf("resize of a VM on host-local storage beyond its host: %+v", out)
	}
}

// A release of a volume that is not the last claim of the zone tells the
// pool it leaves: the claim the last one moved into its place once named
// another pool in the event.
func TestReleasedVolumeTellsItsOwnPool(t *testing.T) {
	m := New(DefaultConfig())
	vm := func(id, pool string) *schemas.PlaceVm {
		r := placeReq("r-"+id, id, 1, 512)
		r.Volumes = []schemas.Volume{{VolumeID: id + "-root", Kind: schemas.VolumeRoot, PoolID: pool, SizeMB: 100}}
		return r
	}
	z, _ := run(t, m, hostUp("h1", "c1", 8, 8192), pool("pa", schemas.PoolScopeZone, 1000), pool("pb", schemas.PoolScopeZone, 1000),
		vm("vm1", "pa"), vm("vm2", "pb"))
	z, out := m.Step(z, rec(&schemas.ReleaseVm{RequestID: "x1", VmID: "vm1", AllVolumes: true}), t0)
	checkInvariants(t, m, z)
	pcs := only[*schemas.StoragePoolChanged](out)
	if len(pcs) != 1 || pcs[0].Pool.PoolID != "pa" || pcs[0].Pool.UsedMB != 0 {
		t.Fatalf("release of vm1's volume on pa told %+v", pcs)
	}
}
