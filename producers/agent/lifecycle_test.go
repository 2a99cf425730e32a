package agent_test

import (
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// TestLifecycleCommands runs every lifecycle command in an order a VM can
// go through and checks each answer's power state and the report that
// follows a power change.
func TestLifecycleCommands(t *testing.T) {
	s := newStack(t, time.Hour, func(d *sim.Driver) {
		if err := d.Start(t.Context(), "h1", agent.VMSpec{ID: "v1", CPU: 1, MemoryMB: 512}); err != nil {
			t.Fatal(err)
		}
	})
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	steps := []struct {
		id     string
		cmd    any
		ok     bool
		power  string
		report bool
	}{
		{"reboot", &schemas.RebootVm{AgentCommand: cmd("reboot", "h1", "v1", 1), Hard: true}, true, schemas.PowerOn, true},
		{"pause", &schemas.PauseVm{AgentCommand: cmd("pause", "h1", "v1", 2)}, true, schemas.PowerPaused, true},
		{"reboot-paused", &schemas.RebootVm{AgentCommand: cmd("reboot-paused", "h1", "v1", 3)}, false, schemas.PowerPaused, false},
		{"unpause", &schemas.UnpauseVm{AgentCommand: cmd("unpause", "h1", "v1", 4)}, true, schemas.PowerOn, true},
		{"suspend", &schemas.SuspendVm{AgentCommand: cmd("suspend", "h1", "v1", 5)}, true, schemas.PowerSusp, true},
		{"resume", &schemas.ResumeVm{AgentCommand: cmd("resume", "h1", "v1", 6)}, true, schemas.PowerOn, true},
		{"rescue", &schemas.RescueVm{AgentCommand: cmd("rescue", "h1", "v1", 7), Image: "rescue.img"}, true, schemas.PowerOn, true},
		{"unrescue", &schemas.UnrescueVm{AgentCommand: cmd("unrescue", "h1", "v1", 8)}, true, schemas.PowerOn, true},
		{"rebuild", &schemas.RebuildVm{AgentCommand: cmd("rebuild", "h1", "v1", 9), Image: "debian"}, true, schemas.PowerOn, true},
		{"snapshot", &schemas.SnapshotVm{AgentCommand: cmd("snapshot", "h1", "v1", 10), SnapshotName: "s1"}, true, schemas.PowerOn, false},
		{"revert-running", &schemas.RevertSnapshotVm{AgentCommand: cmd("revert-running", "h1", "v1", 10), SnapshotName: "s1"}, false, schemas.PowerOn, false},
		{"delete-snapshot", &schemas.DeleteSnapshotVm{AgentCommand: cmd("delete-snapshot", "h1", "v1", 10), SnapshotName: "s1"}, true, schemas.PowerOn, false},
		{"foreign", &schemas.MigrateVm{AgentCommand: cmd("foreign", "h1", "v1", 11), DestHostID: "elsewhere"}, false, schemas.PowerOn, false},
		{"migrate", &schemas.MigrateVm{AgentCommand: cmd("migrate", "h1", "v1", 12), DestHostID: "h2", CPU: 1, MemoryMB: 512}, true, schemas.PowerOn, true},
	}
	v1 := func(r *schemas.PowerReport) bool { return r.VmID == "v1" }
	for _, st := range steps {
		before := len(records(s, v1))
		s.send(st.cmd, "h1")
		a := waitFor(s, 1, answerTo(st.id))[0]
		if a.OK != st.ok || a.PowerState != st.power || a.CommandType != schemas.TypeName(st.cmd) || a.HostID != "h1" {
			t.Fatalf("%s answered %+v, want ok=%v power %s", st.id, a, st.ok, st.power)
		}
		if !st.ok && a.Error == "" {
			t.Fatalf("%s failed without an error", st.id)
		}
		if st.id == "foreign" && a.Error != "destination not served by this agent" {
			t.Fatalf("foreign destination answered %q", a.Error)
		}
		if st.report {
			if r := waitFor(s, before+1, v1)[before]; r.PowerState != st.power {
				t.Fatalf("%s reported %+v", st.id, r)
			}
			continue
		}
		// Answers and reports travel on different topics: give a report
		// that should not exist the time to show up.
		time.Sleep(50 * time.Millisecond)
		if n := len(records(s, v1)); n != before {
			t.Fatalf("%s: %d reports after a command with no power change", st.id, n-before)
		}
	}
	// The migrated VM is reported by the destination and gone from the
	// source.
	last := records(s, func(r *schemas.PowerReport) bool { return r.VmID == "v1" })
	if r := last[len(last)-1]; r.HostID != "h2" || r.PowerState != schemas.PowerOn {
		t.Fatalf("after migrate the last report is %+v", r)
	}
	src, _ := s.drv.PowerStates("h1")
	dst, _ := s.drv.PowerStates("h2")
	if _, ok := src["v1"]; ok || dst["v1"] != schemas.PowerOn {
		t.Fatalf("after migrate h1 %v h2 %v", src, dst)
	}
}
