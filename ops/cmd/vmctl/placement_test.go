package main

import (
	"strings"
	"testing"
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
	// The test read model has no capacity views: the gateway says so.
	code, _, errOut = s.run(t, s.admin, "zone", "capacity", "zone-1")
	if code != 1 || !strings.Contains(errOut, "not configured") {
		t.Fatalf("zone capacity: %d %q", code, errOut)
	}
}
