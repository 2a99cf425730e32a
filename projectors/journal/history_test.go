package journal

import (
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/schemas"
)

// TestVmAtAndHistory projects a VM's life (deployed on h1, stopped by a job,
// a power report after) and asks what the VM was at instants around each
// change.
func TestVmAtAndHistory(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	const t0 = int64(1_760_000_000_000)
	vm := func(state, task, power, host, job, reason string, at int64) *schemas.VmStateChanged {
		return &schemas.VmStateChanged{VmID: "vm-1", Name: "web", Account: "acme", VmState: state, TaskState: task,
			PowerState: power, HostID: host, JobID: job, Reason: reason, UpdatedAt: at, CreatedAt: t0,
			Offering: schemas.Offering{ID: "o1", Name: "small", CPU: 1, MemoryMB: 512}}
	}
	stop := schemas.JobRef{JobID: "job-stop", VmID: "vm-1", Account: "acme", JobType: "Stop", Origin: schemas.OriginAPI}
	at := func(ref schemas.JobRef, ms int64) schemas.JobRef { ref.At = ms; return ref }
	produce(t, cl, "vm-1",
		vm("Active", "", "PowerOn", "h1", "job-deploy", "deployed", t0+1000),
		&schemas.PowerStateObserved{VmID: "vm-1", HostID: "h1", PowerState: "PowerOn", Count: 2, At: t0 + 1500},
		&schemas.JobAccepted{JobRef: at(stop, t0+2000)},
		vm("Active", "Stopping", "PowerOn", "h1", "job-stop", "stopping", t0+2000),
		&schemas.JobSucceeded{JobRef: at(stop, t0+3000), VmState: "Stopped"},
		vm("Stopped", "", "PowerOff", "h1", "job-stop", "stopped by job-stop", t0+3000),
	)
	p := newProjector(t, kcfg, addr, db)
	stopRun, _ := run(t, p)
	eventually(t, 20*time.Second, "all six records committed", func() bool { return committed(t, cl, "journal-test") == 6 })
	if err := stopRun(); err != nil {
		t.Fatal(err)
	}
	r := NewReader(conn, db)

	tests := []struct {
		name                    string
		atMs                    int64
		state, task, power, job string
		count                   int32
		noHistory               bool
	}{
		{name: "before the VM existed", atMs: t0 + 999, noHistory: true},
		{name: "just deployed", atMs: t0 + 1000, state: "Active", power: "PowerOn", count: 0},
		{name: "after an agreeing report", atMs: t0 + 1700, state: "Active", power: "PowerOn", count: 2},
		{name: "while the stop job ran", atMs: t0 + 2500, state: "Active", task: "Stopping", power: "PowerOn", job: "job-stop"},
		{name: "after the stop", atMs: t0 + 9000, state: "Stopped", power: "PowerOff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := r.VmAt(t.Context(), "vm-1", time.UnixMilli(tt.atMs))
			if tt.noHistory {
				if err == nil || !strings.Contains(err.Error(), ErrNoHistory.Error()) {
					t.Fatalf("err = %v, want ErrNoHistory", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.State.VmState != tt.state || s.State.TaskState != tt.task || s.State.PowerState != tt.power ||
				s.PendingJob != tt.job || s.State.HostID != "h1" || s.State.Offering.Name != "small" || s.State.PowerStateUpdateCount != tt.count {
				t.Errorf("snapshot = %+v pending %q", s.State, s.PendingJob)
			}
		})
	}

	h, err := r.VmHistory(t.Context(), "vm-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h {
		got = append(got, e.Type+"/"+e.Reason)
	}
	want := "VmStateChanged/deployed PowerStateObserved/ JobAccepted/ VmStateChanged/stopping JobSucceeded/ VmStateChanged/stopped by job-stop"
	if strings.Join(got, " ") != want {
		t.Errorf("history = %s\nwant      %s", strings.Join(got, " "), want)
	}
}

// TestAnalystIsReadOnly runs a query as the analyst user and checks the
// server itself refuses writes and DDL through the same path.
func TestAnalystIsReadOnly(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	if err := Migrate(t.Context(), conn, db); err != nil {
		t.Fatal(err)
	}
	h, err := OpenHistory(addr, db, chserver.Access{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tab, err := h.Query(t.Context(), "SELECT number, toString(number) AS s FROM system.numbers LIMIT 5", 3)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tab.Columns, ",") != "number,s" || len(tab.Rows) != 3 || !tab.Truncated || tab.Rows[2][0] != "2" {
		t.Fatalf("table = %+v", tab)
	}
	for _, q := range []string{
		"DROP TABLE job_journal",
		"CREATE TABLE x (a UInt8) ENGINE = Memory",
		"ALTER TABLE vm_events DELETE WHERE 1",
		"SET readonly = 0",
		"INSERT INTO lease_events SELECT * FROM lease_events",
	} {
		if _, err := h.Query(t.Context(), q, 10); err == nil {
			t.Errorf("analyst ran %q", q)
		}
	}
	if n := count(t, conn, "SELECT count() FROM system.tables WHERE database = ? AND name = 'job_journal'", db); n != 1 {
		t.Fatal("job_journal is gone")
	}
}
