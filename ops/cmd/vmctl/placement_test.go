package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/readmodel"
)

func TestPlacementCommands(t *testing.T) {
	s := newStack(t)
	code, out, errOut := s.run(t, s.user, "planner", "list")
	if code != 0 || !strings.Contains(out, "ImplicitDedicationPlanner") || !strings.Contains(out, "Dedicated") {
		t.Fatalf("planner list: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.run(t, s.admin, "offering", "create", "--name", "ded", "--cpu", "2", "--memory", "2048",
		"--planner", "ImplicitDedicationPlanner", "--planner-mode", "Preferred", "--host-tags", "ssd,gpu")
	if code != 0 || !strings.Contains(out, "created offering ded") {
		t.Fatalf("offering create: %d %q %q", code, out, errOut)
	}
	code, _, errOut = s.run(t, s.admin, "offering", "create", "--name", "bad", "--cpu", "1", "--memory", "1", "--planner", "Nope")
	if code != 1 || !strings.Contains(errOut, "unknown planner") {
		t.Fatalf("bad planner: %d %q", code, errOut)
	}
	code, _, errOut = s.run(t, s.user, "offering", "create", "--name", "x", "--cpu", "1", "--memory", "1")
	if code != 1 || !strings.Contains(errOut, "admin") {
		t.Fatalf("user create: %d %q", code, errOut)
	}
	code, out, errOut = s.run(t, s.admin, "offering", "update", "small", "--planner", "UserDispersingPlanner", "--ha")
	if code != 0 || !strings.Contains(out, "updated offering small (off-small): planner UserDispersingPlanner, ha true") {
		t.Fatalf("offering update: %d %q %q", code, out, errOut)
	}
	code, _, errOut = s.run(t, s.admin, "offering", "update", "small", "--cpu", "4")
	if code != 1 || !strings.Contains(errOut, "create a new offering") {
		t.Fatalf("offering update --cpu: %d %q", code, errOut)
	}
	code, _, errOut = s.run(t, s.admin, "offering", "update", "small")
	if code != 2 || !strings.Contains(errOut, "needs a field") {
		t.Fatalf("offering update with nothing: %d %q", code, errOut)
	}
	s.rm.PutVM(readmodel.VM{ID: "vm-small", Account: "acct-a", OfferingID: "off-small", VmState: "Stopped"})
	code, _, errOut = s.run(t, s.admin, "offering", "delete", "small")
	if code != 1 || !strings.Contains(errOut, "used by 1 VMs") {
		t.Fatalf("offering delete in use: %d %q", code, errOut)
	}
	s.rm.PutOffering(readmodel.Offering{ID: "off-spare", Name: "spare", CPU: 8, MemoryMB: 8192})
	code, out, errOut = s.run(t, s.admin, "offering", "delete", "spare")
	if code != 0 || !strings.Contains(out, "deleted offering spare (off-spare)") {
		t.Fatalf("offering delete: %d %q %q", code, out, errOut)
	}
	s.rm.PutSnapshot(readmodel.Snapshot{VmID: "vm-1", Name: "before-upgrade", JobID: "job-s1", TakenAt: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)})
	code, out, errOut = s.run(t, s.user, "vm", "snapshots", "vm-1")
	if code != 0 || !strings.Contains(out, "before-upgrade") || !strings.Contains(out, "2026-11-26T12:00:00Z") {
		t.Fatalf("vm snapshots: %d %q %q", code, out, errOut)
	}
	// The test read model has no capacity views: the gateway says so.
	code, _, errOut = s.run(t, s.admin, "zone", "capacity", "zone-1")
	if code != 1 || !strings.Contains(errOut, "not configured") {
		t.Fatalf("zone capacity: %d %q", code, errOut)
	}
}

func TestSettingsCommands(t *testing.T) {
	s := newStack(t)
	code, out, errOut := s.run(t, s.admin, "settings", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^vm\.deployment\.planner +FirstFitPlanner +default +FirstFitPlanner +global,zone +one of`).MatchString(out) {
		t.Fatalf("settings list: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.run(t, s.admin, "settings", "set", "ping.timeout", "20s")
	if code != 0 || !strings.Contains(out, "ping.timeout = 20s (global)") {
		t.Fatalf("settings set: %d %q %q", code, out, errOut)
	}
	code, out, errOut = s.run(t, s.admin, "settings", "set", "vm.deployment.planner", "UserDispersingPlanner", "--zone", "zone-1")
	if code != 0 || !strings.Contains(out, "vm.deployment.planner = UserDispersingPlanner (zone)") {
		t.Fatalf("settings set --zone: %d %q %q", code, out, errOut)
	}
	code, _, errOut = s.run(t, s.admin, "settings", "set", "ping.timeout", "2h")
	if code != 1 || !strings.Contains(errOut, "0s to 1h0m0s") {
		t.Fatalf("out of range: %d %q", code, errOut)
	}
	code, out, errOut = s.run(t, s.admin, "settings", "reset", "alert.wait")
	if code != 0 || !strings.Contains(out, "alert.wait = 30m0s (default)") {
		t.Fatalf("settings reset: %d %q %q", code, out, errOut)
	}
	code, _, errOut = s.run(t, s.user, "settings", "get", "ping.timeout")
	if code != 1 || !strings.Contains(errOut, "admin") {
		t.Fatalf("user get: %d %q", code, errOut)
	}
	if code, _, _ = s.run(t, s.admin, "settings", "set", "ping.timeout"); code != 2 {
		t.Fatalf("set without a value: exit %d, want 2", code)
	}
}
