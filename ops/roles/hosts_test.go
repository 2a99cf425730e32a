package roles

import (
	"log/slog"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// TestHostCrashFencedAndHA crashes a sim host under two VMs, one with HA,
// through the real runtime: the host's agent goes silent, the neighbour and
// the VM-activity checks cannot decide, fencing says Down, both VMs get
// HostDown, the HA VM runs again on another host and the other one rests
// Stopped.
func TestHostCrashFencedAndHA(t *testing.T) {
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
	d, err := sim.New(sim.Config{Layout: sim.Layout{Prefix: "h", Zone: "zone-1", Pods: 1, ClustersPerPod: 1, HostsPerCluster: 3, CPU: 16, MemoryMB: 65536}})
	if err != nil {
		t.Fatal(err)
	}
	go agent.New(agent.Config{ID: "test", Kafka: kcfg, PingInterval: time.Second, Logger: log}, d).Run(ctx)
	waitPlaceable(t, kcfg, 3)

	off := schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}
	for _, vm := range []struct {
		id string
		ha bool
	}{{"vm-ha", true}, {"vm-plain", false}} {
		produce(t, cl, schemas.Record{Topic: schemas.TopicVmCommands, Key: vm.id, Value: &schemas.Deploy{
			VmCommand: schemas.VmCommand{CommandID: "deploy-" + vm.id, VmID: vm.id, Account: "acme", Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()},
			Name:      vm.id, ZoneID: "zone-1", Offering: off, HA: vm.ha}})
		waitFor(t, kcfg, schemas.TopicVmEvents, func(r schemas.Record) bool {
			s, ok := r.Value.(*schemas.JobSucceeded)
			return ok && s.JobID == "deploy-"+vm.id
		})
	}
	hostOf := map[string]string{}
	for _, r := range readAll(t, kcfg, schemas.TopicVmEvents) {
		if v, ok := r.Value.(*schemas.VmStateChanged); ok && v.HostID != "" {
			hostOf[r.Key] = v.HostID
		}
	}
	crashed := hostOf["vm-ha"]
	if crashed == "" || hostOf["vm-plain"] != crashed {
		t.Fatalf("want both VMs on one host (first fit), got %v", hostOf)
	}
	// Let a ping list both VMs, then crash.
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	if err := d.CrashHost(crashed); err != nil {
		t.Fatal(err)
	}

	waitFor(t, kcfg, schemas.TopicHostStatus, func(r schemas.Record) bool {
		s, ok := r.Value.(*schemas.HostStatus)
		return ok && s.HostID == crashed && s.Status == "Down"
	})
	t.Logf("host %s Down %v after the crash (ping timeout 2.5 s)", crashed, time.Since(start).Round(100*time.Millisecond))
	for _, vm := range []string{"vm-ha", "vm-plain"} {
		waitFor(t, kcfg, schemas.TopicVmSignals, func(r schemas.Record) bool {
			s, ok := r.Value.(*schemas.HostDown)
			return ok && s.VmID == vm && s.HostID == crashed
		})
	}
	// The answers that decided it: Unknown, Unknown, Down.
	results := map[string]string{}
	for _, r := range readAll(t, kcfg, schemas.TopicHostEvents) {
		if a, ok := r.Value.(*schemas.CheckHostAnswer); ok && a.TargetHostID == crashed {
			results[a.CommandID] = a.Result
		}
	}
	want := map[string]string{"investigate:" + crashed + ":1:neighbour": "Unknown", "investigate:" + crashed + ":1:vm-activity": "Unknown", "investigate:" + crashed + ":1:fence": "Down"}
	for id, res := range want {
		if results[id] != res {
			t.Fatalf("answers %v, want %v", results, want)
		}
	}

	// HA: the VM processor restarts the HA VM elsewhere; the other stays off.
	waitFor(t, kcfg, schemas.TopicVmEvents, func(r schemas.Record) bool {
		v, ok := r.Value.(*schemas.VmStateChanged)
		return ok && r.Key == "vm-ha" && v.VmState == "Active" && v.HostID != "" && v.HostID != crashed
	})
	t.Logf("vm-ha Active elsewhere %v after the crash", time.Since(start).Round(100*time.Millisecond))
	waitFor(t, kcfg, schemas.TopicVmEvents, func(r schemas.Record) bool {
		v, ok := r.Value.(*schemas.VmStateChanged)
		return ok && r.Key == "vm-plain" && v.VmState == "Stopped"
	})
	alerts := 0
	for _, r := range readAll(t, kcfg, schemas.TopicVmEvents) {
		if _, ok := r.Value.(*schemas.AlertRaised); ok {
			alerts++
		}
	}
	t.Logf("alerts raised: %d", alerts)
}
