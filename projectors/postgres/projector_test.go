package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// scenario writes a small history touching every projected topic, with two
// records vm.events.v1 must dead-letter in the middle.
func scenario(p *producer) {
	const at = int64(1_700_000_000_000)
	small := schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 512}
	job1 := schemas.JobRef{JobID: "job-1", VmID: "vm-1", Account: "acme", JobType: "Deploy", Origin: "api", At: at}
	later := func(r schemas.JobRef, d int64) schemas.JobRef { r.At += d; return r }

	p.send(schemas.TopicCatalog, "off-small", &schemas.ServiceOffering{Offering: small, CreatedAt: at})
	p.send(schemas.TopicCatalog, "off-old", &schemas.ServiceOffering{Offering: schemas.Offering{ID: "off-old", Name: "old"}, CreatedAt: at})
	p.send(schemas.TopicCatalog, "off-old", &schemas.ServiceOffering{Offering: schemas.Offering{ID: "off-old", Name: "old"}, Deleted: true})
	p.send(schemas.TopicAccounts, "acme", &schemas.AccountCreated{AccountID: "acme", Name: "Acme", At: at})
	for _, c := range []schemas.SettingChanged{
		{Name: "ping.timeout", Scope: "global", Value: "20s", By: "admin", At: at},
		{Name: "cpu.overprovisioning.factor", Scope: "cluster", ScopeID: "c1", Value: "8", By: "admin", At: at},
		{Name: "vm.deployment.planner", Scope: "zone", ScopeID: "z1", Value: "BinpackPlanner", By: "admin", At: at},
		{Name: "vm.deployment.planner", Scope: "zone", ScopeID: "z1", Value: "SpreadPlanner", By: "ops", At: at + 1},
		{Name: "cpu.overprovisioning.factor", Scope: "cluster", ScopeID: "c1", By: "admin", At: at + 2},
	} {
		p.send(schemas.TopicSettings, settings.Key(c.Scope, c.ScopeID, c.Name), &c)
	}
	p.send(schemas.TopicAccounts, "acme", &schemas.ApiKeyIssued{KeyID: "k1", AccountID: "acme", Role: "user", Hash: "ab", At: at})
	p.send(schemas.TopicAccounts, "acme", &schemas.ApiKeyIssued{KeyID: "k2", AccountID: "acme", Role: "admin", Hash: "cd", At: at})
	p.send(schemas.TopicAccounts, "acme", &schemas.ApiKeyRevoked{KeyID: "k2", AccountID: "acme", At: at})
	for _, h := range []string{"h1", "h2"} {
		p.send(schemas.TopicHostStatus, h, &schemas.HostStatus{HostID: h, Name: h, ZoneID: "z1", Status: "Connecting",
			ResourceState: "Enabled", CPU: 16, MemoryMB: 65536, CPUOvercommit: 1, MemOvercommit: 1, UpdatedAt: at})
		p.send(schemas.TopicHostStatus, h, &schemas.HostStatus{HostID: h, Name: h, ZoneID: "z1", Status: "Up",
			ResourceState: "Enabled", Reservable: true, CPU: 16, MemoryMB: 65536, CPUOvercommit: 1, MemOvercommit: 1,
			LastPingAt: at, UpdatedAt: at + 1})
	}

	p.send(schemas.TopicVmCommands, "vm-1", &schemas.Deploy{VmCommand: schemas.VmCommand{CommandID: "job-1", VmID: "vm-1",
		Account: "acme", Origin: "api", IssuedAt: at}, Name: "web", ZoneID: "z1", Offering: small})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobAccepted{JobRef: job1})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VmStateChanged{VmID: "vm-1", Name: "web", Account: "acme", ZoneID: "z1",
		Offering: small, VmState: "Building", TaskState: "Scheduling", JobID: "job-1", CreatedAt: at, UpdatedAt: at})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobStepped{JobRef: later(job1, 10), Seq: 1, TaskState: "Scheduling", Step: "place", Text: "asking placement"})
	// Garbage and a type vm.events.v1 does not carry: both to dlq.v1.
	p.raw(&kgo.Record{Topic: schemas.TopicVmEvents, Key: []byte("vm-1"), Value: []byte("not avro")})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.HostStatus{HostID: "h9"})
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.CapacityAllocated{ZoneID: "z1", HostID: "h1", VmID: "vm-1",
		Account: "acme", CPU: 1, MemoryMB: 512, HostUsedCPU: 1, HostUsedMemory: 512, RequestID: "r1", At: at + 20})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobStepped{JobRef: later(job1, 30), Seq: 2, TaskState: "Spawning", Step: "start", Text: "starting on h1"})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobSucceeded{JobRef: later(job1, 40), VmState: "Active"})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VmStateChanged{VmID: "vm-1", Name: "web", Account: "acme", ZoneID: "z1",
		Offering: small, VmState: "Active", PowerState: "PowerOn", HostID: "h1", Epoch: 1, JobID: "job-1",
		AllowedActions: []string{"stop", "reboot", "terminate"}, CreatedAt: at, UpdatedAt: at + 40})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.PowerStateObserved{VmID: "vm-1", HostID: "h1", PowerState: "PowerOn", Count: 2, At: at + 50})
	// vm-1's snapshots: a and b taken, b deleted, a taken again later.
	for _, n := range []string{"a", "b"} {
		p.send(schemas.TopicVmEvents, "vm-1", &schemas.SnapshotTaken{VmID: "vm-1", Account: "acme", Name: n, JobID: "snap-" + n, At: at + 60})
	}
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.SnapshotDeleted{VmID: "vm-1", Account: "acme", Name: "b", JobID: "del-b", At: at + 70})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.SnapshotTaken{VmID: "vm-1", Account: "acme", Name: "a", JobID: "snap-a2", At: at + 80})
	// An offering update: the planner changes, the row stays.
	p.send(schemas.TopicCatalog, "off-small", &schemas.ServiceOffering{Offering: schemas.Offering{ID: "off-small", Name: "small",
		CPU: 1, MemoryMB: 512, DeploymentPlanner: "UserDispersingPlanner"}, CreatedAt: at, StorageTags: []string{"ssd"}})

	storageScenario(p, at)

	// vm-2: a command rejected; vm-3: a command nothing has answered yet.
	p.send(schemas.TopicVmCommands, "vm-2", &schemas.Stop{VmCommand: schemas.VmCommand{CommandID: "job-2", VmID: "vm-2", Account: "other", Origin: "api", IssuedAt: at}})
	p.send(schemas.TopicVmEvents, "vm-2", &schemas.JobRejected{JobRef: schemas.JobRef{JobID: "job-2", VmID: "vm-2", Account: "other",
		JobType: "Stop", Origin: "api", At: at + 5}, Reason: "InvalidState", Detail: "Stopped", AllowedActions: []string{"start", "terminate"}})
	p.send(schemas.TopicVmCommands, "vm-3", &schemas.Reboot{VmCommand: schemas.VmCommand{CommandID: "job-3", VmID: "vm-3", Account: "acme", Origin: "api", IssuedAt: at}})
	// vm-4 lives and is expunged, with its volume, NIC and their snapshot.
	p.send(schemas.TopicVmEvents, "vm-4", &schemas.SnapshotTaken{VmID: "vm-4", Account: "acme", Name: "x", JobID: "snap-x", At: at})
	p.send(schemas.TopicVmEvents, "vm-4", &schemas.VolumeChanged{VmID: "vm-4", Account: "acme", ZoneID: "z1",
		Volume: schemas.Volume{VolumeID: "vol-4", Name: "root", Kind: "Root", PoolID: "p1", SizeMB: 1024, State: "Ready", CreatedAt: at}, At: at})
	p.send(schemas.TopicVmEvents, "vm-4", &schemas.VolumeSnapshotTaken{VmID: "vm-4", Account: "acme", VolumeID: "vol-4", SnapshotName: "s", JobID: "vs-4", At: at})
	p.send(schemas.TopicVmEvents, "vm-4", &schemas.NicChanged{VmID: "vm-4", Account: "acme", ZoneID: "z1",
		Nic: schemas.Nic{NicID: "nic-4", NetworkID: "n1", IP: "10.1.0.9", MAC: "02:00:00:00:00:09"}, At: at})
	p.send(schemas.TopicVmEvents, "vm-4", &schemas.VmStateChanged{VmID: "vm-4", Account: "acme", VmState: "Deleted", CreatedAt: at, UpdatedAt: at})
	p.send(schemas.TopicVmEvents, "vm-4", &schemas.AlertRaised{AlertID: "a1", Kind: "VmStateSync", VmID: "vm-4", Message: "gone", At: at})
	p.send(schemas.TopicVmEvents, "vm-4", &schemas.VmExpunged{VmID: "vm-4", Account: "acme", At: at + 1})
	// A host's alert, keyed by its host, acknowledged twice (the first
	// counts); a rebuild may read the acknowledgements first.
	p.send(schemas.TopicAlertAcks, "a2", &schemas.AlertAcknowledged{AlertID: "a2", By: "ops", At: at + 3})
	p.send(schemas.TopicAlertAcks, "a2", &schemas.AlertAcknowledged{AlertID: "a2", By: "late", At: at + 4})
	p.send(schemas.TopicVmEvents, "h2", &schemas.AlertRaised{AlertID: "a2", Kind: "HostAlert", HostID: "h2", ZoneID: "z1", Message: "agent silent", At: at + 2})
	// The same alert again: its first record is the one kept.
	p.send(schemas.TopicVmEvents, "h2", &schemas.AlertRaised{AlertID: "a2", Kind: "HostAlert", HostID: "h2", ZoneID: "z1", Message: "again", At: at + 5})
}

// storageScenario is the scenario's templates, pools, networks, and vm-1's
// volumes and NICs.
func storageScenario(p *producer, at int64) {
	p.send(schemas.TopicCatalog, schemas.TemplateKey("tiny-linux"), &schemas.Template{ID: "tiny-linux", Name: "tiny-linux",
		Format: "qcow2", SizeMB: 1024, OsType: "Linux (busybox)", CreatedAt: at})
	p.send(schemas.TopicCatalog, schemas.TemplateKey("old"), &schemas.Template{ID: "old", Name: "old", Format: "raw", SizeMB: 2048, CreatedAt: at})
	p.send(schemas.TopicCatalog, schemas.TemplateKey("old"), &schemas.Template{ID: "old", Name: "old", Format: "raw", SizeMB: 2048, Deleted: true, CreatedAt: at})
	// p1 applied, then a change of it refused; p2's creation refused; p3
	// created and deleted.
	p1 := schemas.PoolState{PoolID: "p1", ZoneID: "z1", Name: "primary", Scope: "Zone", Path: "/srv/p1", CapacityMB: 10240,
		UsedMB: 2048, Volumes: 2, Tags: []string{"ssd"}, State: "Up"}
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.StoragePoolChanged{Pool: p1, At: at})
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.StoragePoolChanged{Pool: p1, Refused: "capacity below what its volumes use", At: at + 1})
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.StoragePoolChanged{Pool: schemas.PoolState{PoolID: "p2", ZoneID: "z1",
		Name: "local", Scope: "Host", HostID: "h9", Path: "/srv/p2", CapacityMB: 1024, State: "Up"}, Refused: "no host h9 in zone z1", At: at + 2})
	p3 := schemas.PoolState{PoolID: "p3", ZoneID: "z1", Name: "gone", Scope: "Zone", Path: "/srv/p3", CapacityMB: 1024, State: "Up"}
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.StoragePoolChanged{Pool: p3, At: at + 3})
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.StoragePoolChanged{Pool: p3, Deleted: true, At: at + 4})
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.NetworkChanged{Network: schemas.NetworkState{NetworkID: "n1", ZoneID: "z1",
		Name: "guest", Cidr: "10.1.0.0/24", Gateway: "10.1.0.1", Default: true, Size: 253, Allocated: 2}, At: at})
	p.send(schemas.TopicPlacementEvents, "z1", &schemas.NetworkChanged{Network: schemas.NetworkState{NetworkID: "n2", ZoneID: "z1",
		Name: "clash", Cidr: "10.1.0.0/25", Gateway: "10.1.0.1"}, Refused: "overlaps n1", At: at + 1})
	// vm-1: a root volume with a snapshot, a data volume with one that is
	// deleted with it; a NIC, and one released.
	root := schemas.Volume{VolumeID: "vol-root", Name: "root", Kind: "Root", PoolID: "p1", SizeMB: 1024, TemplateID: "tiny-linux",
		State: "Allocated", CreatedAt: at}
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VolumeChanged{VmID: "vm-1", Account: "acme", ZoneID: "z1", Volume: root, JobID: "job-1", At: at + 20})
	root.State = "Ready"
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VolumeChanged{VmID: "vm-1", Account: "acme", ZoneID: "z1", Volume: root, JobID: "job-1", At: at + 30})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VolumeSnapshotTaken{VmID: "vm-1", Account: "acme", VolumeID: "vol-root", SnapshotName: "before", JobID: "vs-1", At: at + 90})
	data := schemas.Volume{VolumeID: "vol-data", Name: "logs", Kind: "Data", DeviceID: 1, PoolID: "p1", SizeMB: 1024, State: "Ready", CreatedAt: at + 91}
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VolumeChanged{VmID: "vm-1", Account: "acme", ZoneID: "z1", Volume: data, At: at + 91})
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VolumeSnapshotTaken{VmID: "vm-1", Account: "acme", VolumeID: "vol-data", SnapshotName: "d", JobID: "vs-2", At: at + 92})
	data.State = "Detached"
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.VolumeChanged{VmID: "vm-1", Account: "acme", ZoneID: "z1", Volume: data, Deleted: true, At: at + 93})
	for i, ip := range []string{"10.1.0.2", "10.1.0.3"} {
		p.send(schemas.TopicVmEvents, "vm-1", &schemas.NicChanged{VmID: "vm-1", Account: "acme", ZoneID: "z1", Nic: schemas.Nic{
			NicID: fmt.Sprintf("nic-%d", i), NetworkID: "n1", DeviceID: int32(i), MAC: fmt.Sprintf("02:00:00:00:00:0%d", i), IP: ip,
			Gateway: "10.1.0.1", Cidr: "10.1.0.0/24"}, At: at + 20})
	}
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.NicChanged{VmID: "vm-1", Account: "acme", ZoneID: "z1",
		Nic: schemas.Nic{NicID: "nic-1", NetworkID: "n1", DeviceID: 1, IP: "10.1.0.3"}, Released: true, At: at + 95})
}

// checkStorage holds the storage read models to storageScenario.
func checkStorage(t *testing.T, r *readmodel.Reader) {
	t.Helper()
	ctx := t.Context()
	if ts, err := r.Templates(ctx); err != nil || len(ts) != 1 || ts[0].ID != "tiny-linux" || ts[0].SizeMB != 1024 {
		t.Errorf("templates = %+v, err %v", ts, err)
	}
	if old, err := r.Template(ctx, "old"); err != nil || !old.Deleted {
		t.Errorf("deleted template old = %+v, err %v", old, err)
	}
	pools, err := r.Pools(ctx, "z1")
	if err != nil || len(pools) != 1 || pools[0].ID != "p1" || pools[0].UsedMB != 2048 || pools[0].Volumes != 2 ||
		pools[0].LastError != "capacity below what its volumes use" || !slices.Equal(pools[0].Tags, []string{"ssd"}) {
		t.Errorf("pools = %+v, err %v", pools, err)
	}
	if p2, err := r.Pool(ctx, "p2"); err != nil || p2.Applied || p2.LastError != "no host h9 in zone z1" {
		t.Errorf("refused p2 = %+v, err %v", p2, err)
	}
	if _, err := r.Pool(ctx, "p3"); !errors.Is(err, readmodel.ErrNotFound) {
		t.Errorf("deleted p3: err %v", err)
	}
	nets, err := r.Networks(ctx, "")
	if err != nil || len(nets) != 1 || nets[0].ID != "n1" || !nets[0].Default || nets[0].Allocated != 2 || nets[0].Size != 253 {
		t.Errorf("networks = %+v, err %v", nets, err)
	}
	if n2, err := r.Network(ctx, "z1", "n2"); err != nil || n2.Applied || n2.LastError != "overlaps n1" {
		t.Errorf("refused n2 = %+v, err %v", n2, err)
	}
	if n1, err := r.Network(ctx, "z1", "guest"); err != nil || n1.ID != "n1" {
		t.Errorf("network guest = %+v, err %v", n1, err)
	}
	st, err := r.VMStorage(ctx, []string{"vm-1", "vm-4"})
	if err != nil || len(st) != 1 || len(st["vm-1"].Volumes) != 1 || st["vm-1"].Volumes[0].State != "Ready" ||
		len(st["vm-1"].Nics) != 1 || st["vm-1"].Nics[0].IP != "10.1.0.2" {
		t.Errorf("storage of vm-1 and expunged vm-4 = %+v, err %v", st, err)
	}
	if v, err := r.Volume(ctx, "vol-root"); err != nil || len(v.Snapshots) != 1 || v.Snapshots[0].Name != "before" || v.TemplateID != "tiny-linux" {
		t.Errorf("vol-root = %+v, err %v", v, err)
	}
	if v, err := r.Volume(ctx, "vol-data"); err != nil || !v.Deleted || len(v.Snapshots) != 0 {
		t.Errorf("deleted vol-data = %+v, err %v", v, err)
	}
	if vs, err := r.Volumes(ctx, readmodel.VolumeFilter{Account: "acme"}, readmodel.Page{}); err != nil || len(vs) != 1 {
		t.Errorf("acme's volumes = %+v, err %v", vs, err)
	}
	if vs, err := r.Volumes(ctx, readmodel.VolumeFilter{VmID: "vm-1", Deleted: true}, readmodel.Page{}); err != nil || len(vs) != 2 {
		t.Errorf("vm-1's volumes, deleted too = %+v, err %v", vs, err)
	}
}

func TestProjectorProjectsScenario(t *testing.T) {
	kcfg, dsn := testBroker(t), testDB(t)
	p := newProducer(t, kcfg)
	scenario(p)
	cfg := Config{Kafka: kcfg, DSN: dsn}
	_, wait := startProjector(t, cfg, nil)
	waitApplied(t, dsn, DefaultGroup, p)
	_ = wait

	r, err := readmodel.NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := t.Context()

	vm, err := r.VM(ctx, "vm-1")
	if err != nil {
		t.Fatal(err)
	}
	if vm.VmState != "Active" || vm.PowerState != "PowerOn" || vm.HostID != "h1" || vm.Offering != "small" ||
		!slices.Equal(vm.AllowedActions, []string{"stop", "reboot", "terminate"}) || vm.Version <= 0 ||
		vm.HostStatus != "Up" || vm.PowerSeenAt == nil || vm.PowerSeenAt.UnixMilli() != 1_700_000_000_050 {
		t.Errorf("vm-1 = %+v", vm)
	}
	if _, err := r.VM(ctx, "vm-4"); !errors.Is(err, readmodel.ErrNotFound) {
		t.Errorf("expunged vm-4: err %v, want readmodel.ErrNotFound", err)
	}

	job, err := r.Job(ctx, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if job.State != "succeeded" || job.Type != "Deploy" || job.TaskState != "Spawning" || job.FinishedAt == nil || job.VmID != "vm-1" {
		t.Errorf("job-1 = %+v", job)
	}
	steps, err := r.JobSteps(ctx, "job-1")
	if err != nil || len(steps) != 2 || steps[0].Step != "place" || steps[1].TaskState != "Spawning" {
		t.Errorf("job-1 steps = %+v, err %v", steps, err)
	}
	if j, err := r.Job(ctx, "job-2"); err != nil || j.State != "rejected" || j.Reason != "InvalidState" ||
		!slices.Equal(j.AllowedActions, []string{"start", "terminate"}) {
		t.Errorf("job-2 = %+v, err %v", j, err)
	}
	if j, err := r.Job(ctx, "job-3"); err != nil || j.State != "pending" || j.Type != "Reboot" || j.Account != "acme" {
		t.Errorf("job-3 = %+v, err %v", j, err)
	}

	set, err := r.Settings(ctx, "")
	if err != nil || len(set) != 2 || set[0].Name != "ping.timeout" || set[0].Value != "20s" ||
		set[1].ScopeID != "z1" || set[1].Value != "SpreadPlanner" || set[1].By != "ops" {
		t.Errorf("settings = %+v, err %v; want ping.timeout 20s and z1's SpreadPlanner, the cluster's value gone", set, err)
	}

	h1, err := r.Host(ctx, "h1")
	if err != nil || h1.Status != "Up" || !h1.Reservable || h1.UsedCPU != 1 || h1.UsedMemoryMB != 512 || h1.LastPingAt == nil {
		t.Errorf("h1 = %+v, err %v", h1, err)
	}
	if o, err := r.Offering(ctx, "small"); err != nil || o.ID != "off-small" || o.DeploymentPlanner != "UserDispersingPlanner" ||
		!slices.Equal(o.StorageTags, []string{"ssd"}) {
		t.Errorf("offering small = %+v, err %v", o, err)
	}
	if n, err := r.OfferingVMs(ctx, "off-small"); err != nil || n != 1 {
		t.Errorf("vms of off-small: %d, err %v", n, err)
	}
	if sn, err := r.Snapshots(ctx, "vm-1"); err != nil || len(sn) != 1 || sn[0].Name != "a" || sn[0].JobID != "snap-a2" {
		t.Errorf("snapshots of vm-1 = %+v, err %v", sn, err)
	}
	if sn, err := r.Snapshots(ctx, "vm-4"); err != nil || len(sn) != 0 {
		t.Errorf("snapshots of expunged vm-4 = %+v, err %v", sn, err)
	}
	if _, err := r.Offering(ctx, "off-old"); !errors.Is(err, readmodel.ErrNotFound) {
		t.Errorf("deleted offering: err %v", err)
	}
	if k, err := r.APIKey(ctx, "k2"); err != nil || !k.Revoked || k.Role != "admin" {
		t.Errorf("k2 = %+v, err %v", k, err)
	}
	if k, err := r.APIKey(ctx, "k1"); err != nil || k.Revoked {
		t.Errorf("k1 = %+v, err %v", k, err)
	}
	checkStorage(t, r)
	d := dump(t, dsn)
	a2, err := r.Alert(ctx, "a2")
	if err != nil || a2.HostID != "h2" || a2.ZoneID != "z1" || a2.Account != "" || a2.Message != "agent silent" || a2.AckedBy != "ops" || a2.AckedAt == nil ||
		a2.AckedAt.UnixMilli() != 1_700_000_000_003 {
		t.Errorf("a2 = %+v, err %v", a2, err)
	}
	if open, err := r.Alerts(ctx, readmodel.AlertFilter{Acked: new(bool)}, readmodel.Page{}); err != nil || len(open) != 1 || open[0].ID != "a1" {
		t.Errorf("open alerts = %+v, err %v", open, err)
	}
	if len(d["alerts"]) != 2 || len(d["alert_acks"]) != 1 || len(d["allocations"]) != 1 || len(d["accounts"]) != 1 {
		t.Errorf("alerts %v allocations %v accounts %v", d["alerts"], d["allocations"], d["accounts"])
	}

	dead := readDLQ(t, kcfg, 2)
	for _, h := range dead {
		if h["dlq.topic"] != schemas.TopicVmEvents || h["dlq.consumer"] != DefaultGroup || h["dlq.error"] == "" {
			t.Errorf("dead letter headers %v", h)
		}
	}
}

// readDLQ reads want records of dlq.v1 and returns their headers.
func readDLQ(t *testing.T, kcfg kafka.Config, want int) []map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumeTopics(schemas.TopicDLQ), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []map[string]string
	for len(out) < want {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("dlq.v1: got %d records, want %d", len(out), want)
		}
		f.EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
			out = append(out, h)
		})
	}
	if len(out) != want {
		t.Fatalf("dlq.v1: got %d records, want %d", len(out), want)
	}
	return out
}

// TestProjectorRestartAndReplay kills a projector after its first small
// batch, restarts it, and then replays the whole log into the same database
// under another group: every table must equal a single clean run's.
func TestProjectorRestartAndReplay(t *testing.T) {
	kcfg := testBroker(t)
	p := newProducer(t, kcfg)
	scenario(p)

	cleanDSN := testDB(t)
	cancel, wait := startProjector(t, Config{Kafka: kcfg, DSN: cleanDSN, Group: "clean"}, nil)
	waitApplied(t, cleanDSN, "clean", p)
	cancel()
	wait()
	want := dump(t, cleanDSN)

	dsn := testDB(t)
	small := Config{Kafka: kcfg, DSN: dsn, Group: "restart", MaxBatch: 3}
	_, wait = startProjector(t, small, func(pr *Projector, cancel func()) {
		pr.afterCommit = func(int) { cancel() }
	})
	wait()
	t.Log("first run stopped")
	stored, err := storedOffsetsOf(t, dsn, "restart")
	if err != nil {
		t.Fatal(err)
	}
	var applied, total int64
	for _, n := range stored {
		applied += n
	}
	for _, off := range p.last {
		total += off + 1
	}
	if applied == 0 || applied >= total {
		t.Fatalf("the first run applied %d of %d records; want a partial run", applied, total)
	}
	t.Log("restarting")
	_, _ = startProjector(t, small, nil) // stopped at cleanup, like the replay's
	waitApplied(t, dsn, "restart", p)
	t.Log("restarted run caught up")
	if got := dump(t, dsn); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart:\n%v\nclean run:\n%v", got, want)
	}

	// A replay from offset 0 (a new group on the same tables) changes nothing.
	_, _ = startProjector(t, Config{Kafka: kcfg, DSN: dsn, Group: "replay", MaxBatch: 4}, nil)
	waitApplied(t, dsn, "replay", p)
	if got := dump(t, dsn); !reflect.DeepEqual(got, want) {
		t.Fatalf("after replay:\n%v\nclean run:\n%v", got, want)
	}
	// Each group dead-letters the two bad records once, restart or not.
	perGroup := map[string]int{}
	for _, h := range readDLQ(t, kcfg, 6) {
		perGroup[h["dlq.consumer"]]++
	}
	if want := map[string]int{"clean": 2, "restart": 2, "replay": 2}; !reflect.DeepEqual(perGroup, want) {
		t.Fatalf("dead letters per group %v, want %v", perGroup, want)
	}
}

// TestProjectorSessionSkipsWALFlush: the projector's connections commit
// without waiting for the WAL flush (the log is the durable copy).
func TestProjectorSessionSkipsWALFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	p, err := New(Config{DSN: testDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var v string
	if err := p.pool.QueryRow(t.Context(), "SHOW synchronous_commit").Scan(&v); err != nil || v != "off" {
		t.Fatalf("synchronous_commit = %q (%v), want off", v, err)
	}
}
