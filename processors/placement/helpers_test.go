package placement

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func hostUp(id, cluster string, cpu int32, memMB int64, tags ...string) *schemas.HostStatus {
	return &schemas.HostStatus{
		HostID: id, ZoneID: "z1", PodID: "p1", ClusterID: cluster, Status: "Up", ResourceState: "Enabled",
		Reservable: true, CPU: cpu, MemoryMB: memMB, Tags: tags,
	}
}

func placeReq(req, vm string, cpu int32, memMB int64) *schemas.PlaceVm {
	return &schemas.PlaceVm{
		RequestID: req, VmID: vm, ZoneID: "z1", Account: "acme", Epoch: 3,
		Offering: schemas.Offering{ID: "o1", Name: "small", CPU: cpu, MemoryMB: memMB},
	}
}

func rec(v any) schemas.Record {
	return schemas.Record{Topic: schemas.TopicPlacementRequests, Key: "z1", Value: v}
}

// run steps every value in order from an empty zone, checking the ledger
// invariants and the state round trip after each step, and returns the
// state and the outputs of the last step.
func run(t *testing.T, m *Machine, vs ...any) (*schemas.ZoneRecord, []schemas.Record) {
	t.Helper()
	var z *schemas.ZoneRecord
	var out []schemas.Record
	for _, v := range vs {
		z, out = m.Step(z, rec(v), t0)
		checkInvariants(t, m, z)
	}
	return z, out
}

// checkInvariants holds what must be true of every ledger: allocations sum
// to used, nothing is over the over-committed capacity, no VM holds two
// claims, and the state survives its changelog encoding.
func checkInvariants(t *testing.T, m *Machine, z *schemas.ZoneRecord) {
	t.Helper()
	if z == nil {
		return
	}
	type sum struct {
		cpu int32
		mem int64
	}
	sums := map[string]sum{}
	vms := map[string]bool{}
	for _, a := range z.Allocations {
		if vms[a.VmID] {
			t.Fatalf("vm %s holds two allocations: %+v", a.VmID, z.Allocations)
		}
		vms[a.VmID] = true
		if hostIndex(z, a.HostID) < 0 {
			t.Fatalf("allocation of %s on unknown host %s", a.VmID, a.HostID)
		}
		s := sums[a.HostID]
		sums[a.HostID] = sum{s.cpu + a.CPU, s.mem + a.MemoryMB}
	}
	for _, h := range z.Hosts {
		s := sums[h.HostID]
		if s.cpu != h.UsedCPU || s.mem != h.UsedMemoryMB {
			t.Fatalf("host %s: used %d/%d, allocations sum %d/%d", h.HostID, h.UsedCPU, h.UsedMemoryMB, s.cpu, s.mem)
		}
		if int64(h.UsedCPU) > cpuLimit(h) || h.UsedMemoryMB > memLimit(h) {
			t.Fatalf("host %s over capacity: used %d/%d limit %d/%d", h.HostID, h.UsedCPU, h.UsedMemoryMB, cpuLimit(h), memLimit(h))
		}
	}
	if len(z.Decided) > m.cfg.DecidedMemory {
		t.Fatalf("decided holds %d ids, memory is %d", len(z.Decided), m.cfg.DecidedMemory)
	}
	roundTrip(t, z)
}

func roundTrip(t *testing.T, z *schemas.ZoneRecord) {
	t.Helper()
	b, err := schemas.Marshal(z)
	if err != nil {
		t.Fatalf("marshal zone: %v", err)
	}
	v, err := schemas.Unmarshal(b)
	if err != nil {
		t.Fatalf("unmarshal zone: %v", err)
	}
	back, ok := v.(*schemas.ZoneRecord)
	if !ok {
		t.Fatalf("unmarshal zone: got %T", v)
	}
	if !reflect.DeepEqual(canon(back), canon(z)) {
		t.Fatalf("round trip changed the zone:\n got %+v\nwant %+v", back, z)
	}
	b2, err := schemas.Marshal(back)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("re-encoding differs (err %v)", err)
	}
}

// canon maps empty slices to nil: Avro does not tell them apart.
func canon(z *schemas.ZoneRecord) schemas.ZoneRecord {
	c := *z
	c.Hosts = nil
	for _, h := range z.Hosts {
		if len(h.Tags) == 0 {
			h.Tags = nil
		}
		c.Hosts = append(c.Hosts, h)
	}
	if len(z.Allocations) == 0 {
		c.Allocations = nil
	}
	if len(z.Decided) == 0 {
		c.Decided = nil
	}
	return c
}

// only returns the values of the outputs of one type.
func only[T any](out []schemas.Record) []T {
	var vs []T
	for _, r := range out {
		if v, ok := r.Value.(T); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

func host(t *testing.T, z *schemas.ZoneRecord, id string) schemas.HostCapacity {
	t.Helper()
	i := hostIndex(z, id)
	if i < 0 {
		t.Fatalf("host %s not in ledger", id)
	}
	return z.Hosts[i]
}
