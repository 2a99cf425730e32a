package placement

import (
	"fmt"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// BenchmarkDecideWithStorage measures decisions that claim a host, a pool
// for a root volume and an address, in a zone of 1,000 hosts (each with a
// local pool, a pool per cluster and one for the zone) that already holds
// 500,000 volume claims and 500,000 addresses: what a decision costs must
// not grow with the claims. Each decision is followed by the expunge of an
// older VM, so the zone stays the same size.
func BenchmarkDecideWithStorage(b *testing.B) {
	const hosts, claims, live = 1_000, 500_000, 1_000
	m := New(DefaultConfig())
	z := &schemas.ZoneRecord{ZoneID: "z1"}
	for i := range hosts {
		z, _ = m.Step(z, rec(hostUp(fmt.Sprintf("h%04d", i), fmt.Sprintf("c%d", i%10), 64, 1<<20)), t0)
		local := pool(fmt.Sprintf("local%04d", i), schemas.PoolScopeHost, 1<<20)
		local.HostID = fmt.Sprintf("h%04d", i)
		z, _ = m.Step(z, rec(local), t0)
	}
	for c := range 10 {
		p := pool(fmt.Sprintf("cluster%d", c), schemas.PoolScopeCluster, 1<<30)
		p.ClusterID, p.Tags = fmt.Sprintf("c%d", c), []string{"shared"}
		z, _ = m.Step(z, rec(p), t0)
	}
	zp := pool("zone", schemas.PoolScopeZone, 1<<40)
	zp.Tags = []string{"shared"}
	z, _ = m.Step(z, rec(zp), t0)
	for n := range 9 {
		z, _ = m.Step(z, rec(network(fmt.Sprintf("n%d", n), fmt.Sprintf("10.%d.0.0/16", n), fmt.Sprintf("10.%d.0.1", n))), t0)
	}
	// The old claims are written into the ledger, as a restore finds them,
	// and indexed from scratch on the next step.
	for i := range claims {
		n := i % 8
		cd, _ := parseCidr(z.Networks[n].Cidr)
		z.Volumes = append(z.Volumes, schemas.VolumeClaim{VmID: fmt.Sprintf("old%d", i), VolumeID: fmt.Sprintf("old%d-root", i), PoolID: "zone", SizeMB: 1024})
		z.Nics = append(z.Nics, schemas.NicClaim{VmID: fmt.Sprintf("old%d", i), NicID: fmt.Sprintf("old%d-eth0", i), NetworkID: z.Networks[n].NetworkID,
			IP: cd.addr(uint32(2 + i/8)), MAC: fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", byte(i>>24), byte(i>>16), byte(i>>8), byte(i))})
	}
	for k := range z.Pools {
		if z.Pools[k].PoolID == "zone" {
			z.Pools[k].UsedMB, z.Pools[k].Volumes = claims*1024, claims
		}
	}
	for n := range 8 {
		z.Networks[n].Allocated, z.Networks[n].NextIP = claims/8, claims/8+2
	}
	z = &schemas.ZoneRecord{ZoneID: z.ZoneID, Hosts: z.Hosts, Allocations: z.Allocations, Decided: z.Decided,
		Pools: z.Pools, Networks: z.Networks, Volumes: z.Volumes, Nics: z.Nics}
	req := func(i int) *schemas.PlaceVm {
		r := placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 1, 512)
		r.StorageTags = []string{"shared"}
		r.Volumes = []schemas.Volume{{VolumeID: fmt.Sprintf("vm%d-root", i), Kind: schemas.VolumeRoot, SizeMB: 10240}}
		r.Nics = []schemas.Nic{{NicID: fmt.Sprintf("vm%d-eth0", i), NetworkID: "n8"}}
		return r
	}
	for i := range live {
		z, _ = m.Step(z, rec(req(i)), t0)
	}
	i := live
	b.ResetTimer()
	for b.Loop() {
		var out []schemas.Record
		z, out = m.Step(z, rec(req(i)), t0)
		if _, ok := out[len(out)-1].Value.(*schemas.PlacementDecided); !ok {
			b.Fatalf("vm%d: %+v", i, out[len(out)-1].Value)
		}
		z, _ = m.Step(z, rec(&schemas.ReleaseVm{RequestID: fmt.Sprintf("x%d", i), VmID: fmt.Sprintf("vm%d", i-live), AllVolumes: true, Nics: true}), t0)
		i++
	}
}
