package roles

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/schemas"
)

// TestTwoPlannersOneZone runs the placement processor on kfake with an
// ImplicitDedication offering for one account and a FirstFit offering for
// another: the dedicated host never receives the other account's VMs, and
// once emptied it is released after the release period and FirstFit may
// use it.
func TestTwoPlannersOneZone(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	ctx := t.Context()
	kcfg, _ := testkit.Kafka(t)
	timelineOnFailure(t, kcfg, time.Now())
	cl := client(t, kcfg)
	pcfg := placement.DefaultConfig()
	pcfg.HostReservationReleasePeriod = 2 * time.Second
	p, err := engine.New(engine.Config{Name: "processor-placement", Kafka: kcfg, InstanceID: "a",
		Inputs: []string{schemas.TopicPlacementRequests}, Changelog: schemas.TopicPlacementState,
		Logger: slog.New(slog.DiscardHandler)}, engine.Machine[*schemas.ZoneRecord](placement.New(pcfg)))
	if err != nil {
		t.Fatal(err)
	}
	go p.Run(ctx)

	const zone = "zone-1"
	req := func(v any) {
		produce(t, cl, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: v})
	}
	for _, h := range []string{"h1", "h2", "h3"} {
		req(&schemas.HostStatus{HostID: h, ZoneID: zone, PodID: "p1", ClusterID: "c" + h[1:], Status: "Up",
			ResourceState: "Enabled", Reservable: true, CPU: 4, MemoryMB: 8192, CPUOvercommit: 1})
	}
	dedicated := schemas.Offering{ID: "o-ded", Name: "ded", CPU: 1, MemoryMB: 1024, DeploymentPlanner: placement.ImplicitDedicationName}
	shared := schemas.Offering{ID: "o-ff", Name: "big", CPU: 4, MemoryMB: 1024, DeploymentPlanner: placement.FirstFitName}
	place := func(id, vm, account string, o schemas.Offering) schemas.Record {
		req(&schemas.PlaceVm{RequestID: id, VmID: vm, ZoneID: zone, Account: account, Epoch: 1, Offering: o})
		return answer(t, kcfg, id)
	}
	hostOf := func(r schemas.Record) string {
		if d, ok := r.Value.(*schemas.PlacementDecided); ok {
			return d.HostID
		}
		return "failed: " + r.Value.(*schemas.PlacementFailed).Detail
	}

	if h := hostOf(place("r1", "a1", "acme", dedicated)); h != "h1" {
		t.Fatalf("acme's dedicated VM on %s, want h1", h)
	}
	if h := hostOf(place("r2", "a2", "acme", dedicated)); h != "h1" {
		t.Fatalf("acme's second VM on %s, want its dedicated h1", h)
	}
	for _, id := range []string{"b1", "b2"} {
		if h := hostOf(place("r-"+id, id, "bolt", shared)); h == "h1" || strings.HasPrefix(h, "failed") {
			t.Fatalf("bolt's %s: %s", id, h)
		}
	}
	r := place("r-b3", "b3", "bolt", shared)
	if f, ok := r.Value.(*schemas.PlacementFailed); !ok || !strings.Contains(f.Detail, "1 dedicated to another planner") {
		t.Fatalf("bolt's third VM: want a failure naming the dedicated host, got %+v", r.Value)
	}

	// acme's VMs go; after the release period h1 serves FirstFit.
	req(&schemas.ReleaseVm{RequestID: "x1", VmID: "a1", ZoneID: zone})
	req(&schemas.ReleaseVm{RequestID: "x2", VmID: "a2", ZoneID: zone})
	waitFor(t, kcfg, schemas.TopicPlacementEvents, func(r schemas.Record) bool {
		v, ok := r.Value.(*schemas.HostReservationReleased)
		return ok && v.HostID == "h1"
	})
	if h := hostOf(place("r-b4", "b4", "bolt", shared)); h != "h1" {
		t.Fatalf("after the release period bolt's VM on %s, want h1", h)
	}
}

// answer waits for the decision or failure of a request on vm.signals.v1.
func answer(t *testing.T, kcfg kafka.Config, requestID string) schemas.Record {
	t.Helper()
	var got schemas.Record
	waitFor(t, kcfg, schemas.TopicVmSignals, func(r schemas.Record) bool {
		switch v := r.Value.(type) {
		case *schemas.PlacementDecided:
			if v.RequestID == requestID {
				got = r
				return true
			}
		case *schemas.PlacementFailed:
			if v.RequestID == requestID {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// TestPlacementRestoresAZoneWrittenWhole: a changelog holding a zone as
// placement wrote it before the parts, one ZoneRecord under the zone key
// (a dev stack's data directory), is restored; the zone's next write
// writes it in parts, which a fresh processor restores with the old claims
// and the new one.
func TestPlacementRestoresAZoneWrittenWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	ctx := t.Context()
	kcfg, _ := testkit.Kafka(t)
	cl := client(t, kcfg)
	const zone = "zone-1"
	hostCap := func(id string, used int32) schemas.HostCapacity {
		return schemas.HostCapacity{HostID: id, PodID: "p1", ClusterID: "c1", CPU: 2, MemoryMB: 8192, CPUOvercommit: 1, MemOvercommit: 1,
			UsedCPU: used, UsedMemoryMB: int64(used) * 1024, Reservable: true, Planner: placement.FirstFitName, ResourceUsage: placement.Shared}
	}
	produce(t, cl, schemas.Record{Topic: schemas.TopicPlacementState, Key: zone, Value: &schemas.ZoneRecord{
		ZoneID: zone, Hosts: []schemas.HostCapacity{hostCap("h1", 1), hostCap("h2", 0)},
		Allocations: []schemas.Allocation{{VmID: "old", HostID: "h1", Account: "acme", CPU: 1, MemoryMB: 1024, RequestID: "r-old"}},
		Decided:     []string{"r-old"},
	}})
	run := func(id string) context.CancelFunc {
		p, err := engine.New(engine.Config{Name: "processor-placement", Kafka: kcfg, InstanceID: id, SessionTimeout: 2 * time.Second,
			Inputs: []string{schemas.TopicPlacementRequests}, Changelog: schemas.TopicPlacementState,
			Logger: slog.New(slog.DiscardHandler)}, engine.Machine[*schemas.ZoneRecord](placement.New(placement.DefaultConfig())))
		if err != nil {
			t.Fatal(err)
		}
		pctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(pctx) }()
		return func() {
			stop()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	hostOf := func(id, vm string) string {
		produce(t, cl, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: &schemas.PlaceVm{RequestID: id, VmID: vm,
			ZoneID: zone, Account: "acme", Epoch: 1, Offering: schemas.Offering{ID: "o", Name: "o", CPU: 1, MemoryMB: 1024}}})
		if d, ok := answer(t, kcfg, id).Value.(*schemas.PlacementDecided); ok {
			return d.HostID
		}
		return "none"
	}

	stop := run("a")
	if h := hostOf("r-a", "a"); h != "h1" {
		t.Fatalf("a on %s, want h1 beside the old VM", h)
	}
	stop()
	// The zone key's latest record is the zone's header now, and every
	// host and VM has its part.
	latest := map[string]string{}
	for _, r := range readAll(t, kcfg, schemas.TopicPlacementState) {
		latest[r.Key] = schemas.TypeName(r.Value)
	}
	for k, want := range map[string]string{zone: "ZoneHeader", schemas.PartKey(zone, "host:h1"): "ZoneHost",
		schemas.PartKey(zone, "host:h2"): "ZoneHost", schemas.PartKey(zone, "vm:old"): "ZoneVm", schemas.PartKey(zone, "vm:a"): "ZoneVm"} {
		if latest[k] != want {
			t.Errorf("latest record of %q is a %q, want a %s", k, latest[k], want)
		}
	}

	stop = run("b")
	defer stop()
	// h1 is full with the old VM and a: the restored parts hold both.
	if h := hostOf("r-b", "b"); h != "h2" {
		t.Fatalf("b on %s, want h2", h)
	}
	if h := hostOf("r-c", "c"); h != "h2" {
		t.Fatalf("c on %s, want h2", h)
	}
	if h := hostOf("r-d", "d"); h != "none" {
		t.Fatalf("d on %s in a full zone", h)
	}
}
