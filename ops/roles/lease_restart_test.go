package roles

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/schemas"
)

// TestLeaseZoneRestoresFromItsParts restarts the lease processor (the
// real runtime on kfake) between learning where another project's VMs run
// and a lease asking for a host. The zone comes back from the parts on
// lease.state.v1: the lease takes the one host that runs no VM, which only
// the restored claims tell apart (by id, the lease would take h1).
func TestLeaseZoneRestoresFromItsParts(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	kcfg, _ := testkit.Kafka(t)
	timelineOnFailure(t, kcfg, time.Now())
	cl := client(t, kcfg)
	o := Options{Kafka: kcfg, InstanceID: "a", Logger: slog.New(slog.DiscardHandler)}
	run := func(ctx context.Context) chan error {
		p, err := NewProcessor(KindLease, o, Settings{}, engine.SystemClock{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		return done
	}
	const zone = "zone-1"
	first, stop := context.WithCancel(t.Context())
	done := run(first)
	for _, h := range []string{"h1", "h2", "h3"} {
		produce(t, cl, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: &schemas.HostStatus{
			HostID: h, ZoneID: zone, Status: "Up", ResourceState: "Enabled", Reservable: true}})
	}
	for _, h := range []string{"h1", "h2"} {
		produce(t, cl, schemas.Record{Topic: schemas.TopicPlacementEvents, Key: zone, Value: &schemas.CapacityAllocated{
			ZoneID: zone, HostID: h, VmID: "vm-bolt-" + h, Account: "bolt"}})
	}
	waitFor(t, kcfg, schemas.TopicLeaseState, func(r schemas.Record) bool {
		v, ok := r.Value.(*schemas.LeaseZoneVm)
		return ok && v.VmID == "vm-bolt-h2"
	})
	stop()
	if err := <-done; err != nil && first.Err() == nil {
		t.Fatalf("first lease processor: %v", err)
	}

	run(t.Context())
	produce(t, cl, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: &schemas.CreateLease{
		CommandID: "lease-create-1", LeaseID: "lease-1", ZoneID: zone, Project: "acme", Name: "lab",
		End: time.Now().Add(time.Hour).UnixMilli(), Reservations: []schemas.ReservationSpec{{MinHosts: 1, MaxHosts: 1}}}})
	var hosts []string
	waitFor(t, kcfg, schemas.TopicLeaseEvents, func(r schemas.Record) bool {
		v, ok := r.Value.(*schemas.LeaseStatusChanged)
		if ok && v.LeaseID == "lease-1" && v.Status == "ACTIVE" {
			hosts = v.Reservations[0].Hosts
		}
		return hosts != nil
	})
	if !slices.Equal(hosts, []string{"h3"}) {
		t.Fatalf("lease on %v after the restart, want h3, the host that runs none of bolt's VMs", hosts)
	}
}
