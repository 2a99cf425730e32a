package postgres

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestProjectorSupersedesAccepted holds the projector to its side of
// accepted_resources: the transaction that writes a VM's, a job's or a
// lease's row (or removes an expunged VM's) deletes what the gateways
// accepted of it, and nothing else — not a VM that only had its power
// observed, nor a lease that only had an answer about it.
func TestProjectorSupersedesAccepted(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and the embedded broker")
	}
	kcfg := testBroker(t)
	dsn, conn := migratedDB(t)
	acc, err := readmodel.NewAccepted(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	now := time.Now().UTC()
	row := func(kind, id string) readmodel.AcceptedRow {
		return readmodel.AcceptedRow{Kind: kind, ID: id, Account: "acme", Body: []byte(`{}`), At: now}
	}
	if err := acc.Put(t.Context(),
		row("vm", "vm1"), row("job", "d1"), // a deploy: its command and its first state come
		row("job", "s1"),                       // a stop whose JobAccepted comes before its command
		row("vm", "vm2"),                       // only its power is observed: no row
		row("vm", "vm3"),                       // made and expunged in one batch
		row("lease", "l1"), row("lease", "l9"), // l9 only has an answer about it
		row("job", "x9"),                   // never seen
		row("vm", "vm4"), row("job", "d4"), // a deploy the VM processor rejected: no VM row comes
	); err != nil {
		t.Fatal(err)
	}

	p := newProducer(t, kcfg)
	at := now.UnixMilli()
	off := schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}
	p.send(schemas.TopicVmCommands, "vm1", &schemas.Deploy{VmCommand: schemas.VmCommand{CommandID: "d1", VmID: "vm1", Account: "acme",
		Origin: schemas.OriginAPI, IssuedAt: at}, Name: "web", ZoneID: "z1", Offering: off})
	p.send(schemas.TopicVmEvents, "vm1", &schemas.VmStateChanged{VmID: "vm1", Name: "web", Account: "acme", ZoneID: "z1", Offering: off,
		VmState: "Building", TaskState: "Scheduling", PowerState: "PowerUnknown", LegacyState: "Starting", Epoch: 1, JobID: "d1",
		AllowedActions: []string{"terminate"}, UpdatedAt: at})
	p.send(schemas.TopicVmEvents, "vm1", &schemas.JobAccepted{JobRef: schemas.JobRef{JobID: "s1", VmID: "vm1", Account: "acme",
		JobType: "Stop", Origin: schemas.OriginAPI, At: at}, Queued: true, Position: 1})
	p.send(schemas.TopicVmEvents, "vm2", &schemas.PowerStateObserved{VmID: "vm2", HostID: "h1", PowerState: "PowerOn", Count: 2, At: at})
	p.send(schemas.TopicVmEvents, "vm3", &schemas.VmStateChanged{VmID: "vm3", Name: "db", Account: "acme", ZoneID: "z1", Offering: off,
		VmState: "Building", PowerState: "PowerUnknown", UpdatedAt: at})
	p.send(schemas.TopicVmEvents, "vm3", &schemas.VmExpunged{VmID: "vm3", Account: "acme", At: at})
	p.send(schemas.TopicLeaseEvents, "z1", &schemas.LeaseStatusChanged{LeaseID: "l1", ZoneID: "z1", Project: "acme", Name: "lab",
		Status: "PENDING", Event: "created", Start: at, End: at + 3_600_000, At: at})
	p.send(schemas.TopicLeaseEvents, "z1", &schemas.LeaseStatusChanged{LeaseID: "l9", ZoneID: "z1", Project: "acme",
		Event: "delete_failed", Detail: "no lease l9", At: at})
	p.send(schemas.TopicVmEvents, "vm4", &schemas.JobRejected{JobRef: schemas.JobRef{JobID: "d4", VmID: "vm4", Account: "acme",
		JobType: "Deploy", Origin: schemas.OriginAPI, At: at}, Reason: "AlreadyExists", Detail: "test"})
	startProjector(t, Config{Kafka: kcfg, DSN: dsn}, nil)
	waitApplied(t, dsn, DefaultGroup, p)

	rows, err := conn.Query(t.Context(), `SELECT kind || ' ' || id FROM accepted_resources ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"job x9", "lease l9", "vm vm2"}; !slices.Equal(left, want) {
		t.Fatalf("accepted rows left %q, want %q", left, want)
	}
	for _, id := range []string{"d1", "s1"} {
		if _, err := acc.Get(t.Context(), "job", id); err != readmodel.ErrNotFound {
			t.Fatalf("accepted job %s after its row: %v", id, err)
		}
	}
}
