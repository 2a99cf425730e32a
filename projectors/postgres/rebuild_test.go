package postgres

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// fleet adds n VMs with a deploy job each (accepted, two steps, success),
// power reports, and every third VM stopped by a second job whose command
// and events interleave with other VMs' records.
func fleet(p interface {
	send(topic, key string, v any)
}, n int) {
	const at = int64(1_700_000_100_000)
	small := schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 512}
	for i := range n {
		vm, job := fmt.Sprintf("fvm-%d", i), fmt.Sprintf("fjob-%d", i)
		t := at + int64(i)*100
		ref := schemas.JobRef{JobID: job, VmID: vm, Account: "acme", JobType: "Deploy", Origin: "api", At: t + 5}
		p.send(schemas.TopicVmCommands, vm, &schemas.Deploy{VmCommand: schemas.VmCommand{CommandID: job, VmID: vm,
			Account: "acme", Origin: "api", IssuedAt: t}, Name: vm, ZoneID: "z1", Offering: small})
		p.send(schemas.TopicVmEvents, vm, &schemas.JobAccepted{JobRef: ref})
		ref.At = t + 10
		p.send(schemas.TopicVmEvents, vm, &schemas.JobStepped{JobRef: ref, Seq: 1, TaskState: "Scheduling", Step: "schedule", Text: "placing"})
		ref.At = t + 20
		p.send(schemas.TopicVmEvents, vm, &schemas.JobStepped{JobRef: ref, Seq: 2, TaskState: "Spawning", Step: "spawn", Text: "starting", Obj: `{"host_id":"h1"}`})
		ref.At = t + 30
		p.send(schemas.TopicVmEvents, vm, &schemas.JobSucceeded{JobRef: ref, VmState: "Active"})
		p.send(schemas.TopicVmEvents, vm, &schemas.VmStateChanged{VmID: vm, Name: vm, Account: "acme", ZoneID: "z1", Offering: small,
			VmState: "Active", PowerState: "PowerOn", HostID: "h1", Epoch: 1, JobID: job, AllowedActions: []string{"stop", "terminate"},
			CreatedAt: t, UpdatedAt: t + 30})
		p.send(schemas.TopicVmEvents, vm, &schemas.PowerStateObserved{VmID: vm, HostID: "h1", PowerState: "PowerOn", Count: 1, At: t + 40})
		if i%3 == 0 {
			stop := "fstop-" + vm
			p.send(schemas.TopicVmCommands, vm, &schemas.Stop{VmCommand: schemas.VmCommand{CommandID: stop, VmID: vm, Account: "acme",
				Origin: "api", IssuedAt: t + 50}})
			if i%2 == 0 {
				sr := schemas.JobRef{JobID: stop, VmID: vm, Account: "acme", JobType: "Stop", Origin: "api", At: t + 60}
				p.send(schemas.TopicVmEvents, vm, &schemas.JobAccepted{JobRef: sr})
				sr.At = t + 70
				p.send(schemas.TopicVmEvents, vm, &schemas.JobFailed{JobRef: sr, Reason: "Timeout", Detail: "no answer", VmState: "Active"})
			}
		}
	}
}

// churn adds what the rebuild folds instead of replaying statement by
// statement: a host whose capacity is claimed before its first status, a
// second claim on it (the row's time stays the first claim's), a status
// that then takes the row over, a claim released and made again, one
// released for good, and an alert raised twice.
func churn(p interface {
	send(topic, key string, v any)
}) {
	const at = int64(1_700_000_500_000)
	claim := func(vm, host string, used int32, at int64) {
		p.send(schemas.TopicPlacementEvents, "z2", &schemas.CapacityAllocated{ZoneID: "z2", HostID: host, VmID: vm, Account: "acme",
			CPU: 1, MemoryMB: 512, HostUsedCPU: used, HostUsedMemory: int64(used) * 512, RequestID: vm + "-claim", At: at})
	}
	release := func(vm, host string, used int32, at int64) {
		p.send(schemas.TopicPlacementEvents, "z2", &schemas.CapacityReleased{ZoneID: "z2", HostID: host, VmID: vm, CPU: 1,
			MemoryMB: 512, HostUsedCPU: used, HostUsedMemory: int64(used) * 512, RequestID: vm + "-release", At: at})
	}
	claim("cvm-1", "ch-1", 1, at)
	claim("cvm-2", "ch-1", 2, at+10)
	claim("cvm-3", "ch-2", 1, at+20)
	p.send(schemas.TopicHostStatus, "ch-2", &schemas.HostStatus{HostID: "ch-2", Name: "ch-2", ZoneID: "z2", Status: "Up",
		ResourceState: "Enabled", Reservable: true, CPU: 8, MemoryMB: 8192, CPUOvercommit: 2, MemOvercommit: 1,
		Tags: []string{"gpu"}, LastPingAt: at + 30, UpdatedAt: at + 30})
	release("cvm-1", "ch-1", 1, at+40)
	claim("cvm-1", "ch-1", 2, at+50)
	release("cvm-3", "ch-2", 0, at+60)
	for range 2 {
		p.send(schemas.TopicVmEvents, "cvm-1", &schemas.AlertRaised{AlertID: "calert-1", Kind: "VmStateSync", VmID: "cvm-1",
			HostID: "ch-1", Message: "found off", At: at + 70})
	}
}

// TestRebuildEqualsLive projects a log live, in small batches, then rebuilds
// the same database from the log: every read model table is the same, row
// for row, the replaced tables are kept aside, and a projector started
// afterwards goes on from where the rebuild stopped.
func TestRebuildEqualsLive(t *testing.T) {
	kcfg, dsn := testBroker(t), testDB(t)
	p := newProducer(t, kcfg)
	scenario(p)
	fleet(p, 60)
	churn(p)

	cancel, wait := startProjector(t, Config{Kafka: kcfg, DSN: dsn, MaxBatch: 7}, nil)
	waitApplied(t, dsn, DefaultGroup, p)
	cancel()
	wait()
	live := dumpAll(t, dsn)

	st, err := Rebuild(t.Context(), kcfg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records == 0 || st.Rows == 0 || st.OldSchema == "" {
		t.Fatalf("stats = %+v", st)
	}
	rebuilt := dumpAll(t, dsn)
	for table, rows := range live {
		if len(rows) == 0 && table != "host_reservations" {
			t.Errorf("live %s is empty: the test proves nothing about it", table)
		}
		if !reflect.DeepEqual(rebuilt[table], rows) {
			t.Errorf("%s differs after the rebuild\nlive    %d rows %q\nrebuilt %d rows %q", table, len(rows), rows, len(rebuilt[table]), rebuilt[table])
		}
	}

	// The old tables are kept aside, untouched.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+pgx.Identifier{st.OldSchema, "vms"}.Sanitize()).Scan(&n); err != nil || n != len(live["vms"]) {
		t.Fatalf("old schema %s vms: %d rows, err %v; want %d", st.OldSchema, n, err, len(live["vms"]))
	}

	// A projector started now takes up from the rebuilt offsets.
	p.send(schemas.TopicVmEvents, "vm-late", &schemas.VmStateChanged{VmID: "vm-late", Account: "acme", VmState: "Active",
		CreatedAt: 1_700_000_900_000, UpdatedAt: 1_700_000_900_000})
	startProjector(t, Config{Kafka: kcfg, DSN: dsn}, nil)
	waitApplied(t, dsn, DefaultGroup, p)
	after := dumpAll(t, dsn)
	if len(after["vms"]) != len(live["vms"])+1 {
		t.Errorf("vms after the late record: %d rows, want %d", len(after["vms"]), len(live["vms"])+1)
	}
}

// dumpAll is dump plus host_reservations.
func dumpAll(t *testing.T, dsn string) map[string][]string {
	t.Helper()
	out := dump(t, dsn)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), "SELECT t::text FROM host_reservations t ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	out["host_reservations"], err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
