package postgres

import (
	"slices"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

func rec(offset int64, v any) schemas.Record {
	return schemas.Record{Topic: "t", Offset: offset, Value: v, TimestampMs: 1_000}
}

func ref(job string) schemas.JobRef {
	return schemas.JobRef{JobID: job, VmID: "vm-1", Account: "acme", JobType: "Stop", Origin: "api", At: 5_000}
}

func TestFoldVMs(t *testing.T) {
	state := &schemas.VmStateChanged{VmID: "vm-1", Name: "web", VmState: "Active", PowerState: "PowerOn", AllowedActions: []string{"stop"}}
	power := &schemas.PowerStateObserved{VmID: "vm-1", HostID: "h2", PowerState: "PowerOff", Count: 2, At: 7_000}
	gone := &schemas.VmExpunged{VmID: "vm-1"}
	tests := []struct {
		name        string
		in          []any
		op          vmOp
		power       string
		version     int64
		wantActions []string
	}{
		{"state only", []any{state}, vmUpsert, "PowerOn", 1, []string{"stop"}},
		{"power folds into the full row", []any{state, power}, vmUpsert, "PowerOff", 2, []string{"stop"}},
		{"power alone is a partial update", []any{power}, vmPower, "PowerOff", 1, nil},
		{"expunge wins over earlier state", []any{state, power, gone}, vmDelete, "PowerOff", 3, []string{"stop"}},
		{"power after expunge is dropped", []any{gone, power}, vmDelete, "", 1, nil},
		{"state after expunge recreates", []any{gone, state}, vmUpsert, "PowerOn", 2, []string{"stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChanges()
			for i, v := range tt.in {
				if !c.add(rec(int64(i+1), v)) {
					t.Fatalf("%T not projected", v)
				}
			}
			if len(c.vmOrder) != 1 {
				t.Fatalf("got %d vm changes, want 1", len(c.vmOrder))
			}
			got := c.vms["vm-1"]
			if got.op != tt.op || got.row.PowerState != tt.power || got.version != tt.version ||
				!slices.Equal(got.row.AllowedActions, tt.wantActions) {
				t.Fatalf("got op %d power %q version %d actions %v, want op %d power %q version %d actions %v",
					got.op, got.row.PowerState, got.version, got.row.AllowedActions, tt.op, tt.power, tt.version, tt.wantActions)
			}
		})
	}
}

func TestFoldJobs(t *testing.T) {
	accepted := &schemas.JobAccepted{JobRef: ref("j1")}
	queued := &schemas.JobAccepted{JobRef: ref("j1"), Queued: true}
	stepped := &schemas.JobStepped{JobRef: ref("j1"), Seq: 1, TaskState: "Stopping", Step: "stop"}
	succeeded := &schemas.JobSucceeded{JobRef: ref("j1"), VmState: "Stopped"}
	failed := &schemas.JobFailed{JobRef: ref("j1"), Reason: "Timeout", Detail: "no answer"}
	rejected := &schemas.JobRejected{JobRef: ref("j1"), Reason: "InvalidState", AllowedActions: []string{"start"}}
	tests := []struct {
		name      string
		in        []any
		state     string
		taskState *string
		reason    *string
		finished  bool
		steps     int
		actions   []string
	}{
		{"accepted runs", []any{accepted}, "running", nil, nil, false, 0, nil},
		{"queued waits", []any{queued}, "pending", nil, nil, false, 0, nil},
		{"stepped sets task state", []any{queued, stepped}, "running", ptr("Stopping"), nil, false, 1, nil},
		{"succeeded keeps task state", []any{accepted, stepped, succeeded}, "succeeded", ptr("Stopping"), ptr(""), true, 1, nil},
		{"failed alone leaves task state to the table", []any{failed}, "failed", nil, ptr("Timeout"), true, 0, nil},
		{"rejected carries allowed actions", []any{rejected}, "rejected", nil, ptr("InvalidState"), true, 0, []string{"start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChanges()
			for i, v := range tt.in {
				c.add(rec(int64(i), v))
			}
			j := c.jobs["j1"]
			if j == nil || len(c.jobIDs) != 1 {
				t.Fatalf("want exactly one job change, got %v", c.jobIDs)
			}
			if j.State != tt.state || !eqPtr(j.TaskState, tt.taskState) || !eqPtr(j.Reason, tt.reason) ||
				(j.FinishedAt != nil) != tt.finished || len(c.steps) != tt.steps || !slices.Equal(j.AllowedActions, tt.actions) {
				t.Fatalf("got state %s task %v reason %v finished %v steps %d actions %v",
					j.State, shown(j.TaskState), shown(j.Reason), j.FinishedAt, len(c.steps), j.AllowedActions)
			}
			if j.version != int64(len(tt.in)-1) || j.Type != "Stop" || j.VmID != "vm-1" {
				t.Fatalf("got version %d type %s vm %s", j.version, j.Type, j.VmID)
			}
		})
	}
}

func TestFoldCommands(t *testing.T) {
	c := newChanges()
	stop := &schemas.Stop{VmCommand: schemas.VmCommand{CommandID: "c1", VmID: "vm-1", Account: "acme", Origin: "api", IssuedAt: 9_000}}
	if !c.add(rec(0, stop)) || !c.add(rec(1, stop)) {
		t.Fatal("command not projected")
	}
	if len(c.newIDs) != 1 || c.newJobs["c1"].Type != "Stop" || c.newJobs["c1"].State != "pending" {
		t.Fatalf("got %v %+v", c.newIDs, c.newJobs["c1"])
	}
	if c.add(rec(2, &schemas.ZoneRecord{ZoneID: "z"})) {
		t.Fatal("ZoneRecord has no table and must report false")
	}
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func shown(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
