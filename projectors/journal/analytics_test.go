package journal

import (
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/schemas"
)

// sqlBlock matches a ```sql fenced block of docs/analytics.md.
var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// TestDocumentedQueries feeds the projector a small fleet's history and runs
// every query of docs/analytics.md as the analyst user: each must run and
// return rows.
func TestDocumentedQueries(t *testing.T) {
	doc, err := os.ReadFile("../../docs/analytics.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := sqlBlock.FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 10 {
		t.Fatalf("docs/analytics.md has %d sql blocks, want at least 10", len(blocks))
	}

	_, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	base := time.Now().UTC().Truncate(time.Hour).Add(time.Minute).UnixMilli()
	recs := analyticsFleet(base)
	if err := produceRecords(t.Context(), cl, recs); err != nil {
		t.Fatal(err)
	}
	p := newProjector(t, kcfg, addr, db)
	stop, _ := run(t, p)
	eventually(t, 30*time.Second, "every record committed", func() bool {
		return committed(t, cl, "journal-test") == int64(len(recs))
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	h, err := OpenHistory(addr, db, chserver.Access{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for i, b := range blocks {
		tab, err := h.Query(t.Context(), b[1], 1000)
		if err != nil {
			t.Errorf("query %d failed: %v\n%s", i+1, err, b[1])
			continue
		}
		if len(tab.Rows) == 0 {
			t.Errorf("query %d returned no rows:\n%s", i+1, b[1])
			continue
		}
		t.Logf("query %d: %d rows, first %v", i+1, len(tab.Rows), tab.Rows[0])
	}
}

// analyticsFleet is a history every documented query finds something in:
// jobs of several types and outcomes on several hosts, asked for by two
// API keys (the key of the audit queries, 3f9a1c20b7d4, asked for vm-a's
// starts), an HA restart by the system, a job cancelled by terminate, a
// rejected command, a flapping VM, a host that went down and a healed
// lease.
func analyticsFleet(base int64) []schemas.Record {
	var out []schemas.Record
	ev := func(vm string, v any) {
		out = append(out, schemas.Record{Topic: schemas.TopicVmEvents, Key: vm, Value: v})
	}
	job := func(vm, id, typ, host string, at, dur int64, end func(schemas.JobRef) any) {
		ref := func(d int64) schemas.JobRef {
			return schemas.JobRef{JobID: id, VmID: vm, Account: "acme", JobType: typ, Origin: schemas.OriginAPI, At: at + d}
		}
		caller := schemas.Caller{Account: "acme", KeyID: "3f9a1c20b7d4", RequestID: "req-" + id}
		switch {
		case typ == "HARestart":
			caller = schemas.SystemCaller()
		case vm != "vm-a":
			caller.KeyID = "77e0c4d1a9b2"
		}
		ev(vm, &schemas.JobAccepted{JobRef: ref(0), Caller: caller})
		ev(vm, &schemas.JobStepped{JobRef: ref(1), Seq: 1, TaskState: "Starting", Step: "start", Text: "starting on " + host,
			Obj: `{"host_id":"` + host + `"}`})
		ev(vm, end(ref(dur)))
	}
	ok := func(state string) func(schemas.JobRef) any {
		return func(r schemas.JobRef) any {
			return &schemas.JobSucceeded{JobRef: r, VmState: state, StartedAt: r.At - 150}
		}
	}
	for i := range 6 {
		job("vm-a", "start-"+string(rune('a'+i)), "Start", "h1", base+int64(i)*1000, 200+int64(i)*50, ok("Active"))
	}
	job("vm-b", "deploy-1", "Deploy", "h2", base+10_000, 900, func(r schemas.JobRef) any {
		return &schemas.JobFailed{JobRef: r, Reason: "AgentError", Detail: "h2 refused", VmState: "Error", StartedAt: r.At - 800}
	})
	job("vm-c", "ha-1", "HARestart", "h3", base+11_000, 1500, ok("Active"))
	job("vm-d", "reboot-1", "Reboot", "h1", base+12_000, 300, func(r schemas.JobRef) any {
		return &schemas.JobCancelled{JobRef: r, Reason: "Cancelled by terminate job term-1", VmState: "Active"}
	})
	ev("vm-e", &schemas.JobRejected{JobRef: schemas.JobRef{JobID: "start-x", VmID: "vm-e", Account: "acme", JobType: "Start",
		Origin: schemas.OriginAPI, At: base + 13_000}, Reason: "InvalidState", Detail: "VM is Active", AllowedActions: []string{"stop"},
		Caller: schemas.Caller{Account: "acme", KeyID: "3f9a1c20b7d4", RequestID: "req-start-x"}})
	for i, state := range []string{"Active", "Stopped", "Active", "Stopped", "Active", "Stopped"} {
		power := map[string]string{"Active": "PowerOn", "Stopped": "PowerOff"}[state]
		ev("vm-flap", &schemas.VmStateChanged{VmID: "vm-flap", Account: "acme", VmState: state, PowerState: power, HostID: "h1",
			Reason: "power report: " + power, UpdatedAt: base + 20_000 + int64(i)*1000})
	}
	for i, status := range []string{"Up", "Disconnected", "Down", "Up"} {
		out = append(out, schemas.Record{Topic: schemas.TopicHostStatus, Key: "h2", Value: &schemas.HostStatus{
			HostID: "h2", ZoneID: "zone-1", Status: status, ResourceState: "Enabled", Reservable: status == "Up",
			UpdatedAt: base + 30_000 + int64(i)*1000}})
	}
	for i, event := range []string{"created", "started", "healed"} {
		out = append(out, schemas.Record{Topic: schemas.TopicLeaseEvents, Key: "zone-1", Value: &schemas.LeaseStatusChanged{
			LeaseID: "lease-1", ZoneID: "zone-1", Project: "acme", Status: "ACTIVE", Degraded: event == "healed",
			Event: event, At: base + 40_000 + int64(i)*1000}})
	}
	return out
}
