package sim

import (
	"testing"

	"github.com/vmplane/vmplane/producers/agent"
)

func TestCheckAndFence(t *testing.T) {
	hosts := []agent.HostInfo{{ID: "a", Cluster: "c"}, {ID: "b", Cluster: "c"}}
	tests := []struct {
		name              string
		setup             func(d *Driver)
		neighbour, active string
	}{
		{"healthy", func(*Driver) {}, "Up", "Up"},
		{"partitioned with a running vm", func(d *Driver) { _ = d.Partition("b") }, "Unknown", "Up"},
		{"partitioned with a stopped vm", func(d *Driver) { _ = d.Partition("b"); _ = d.OutOfBand("b", "v1", "PowerOff") }, "Unknown", "Unknown"},
		{"crashed", func(d *Driver) { _ = d.CrashHost("b") }, "Unknown", "Unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(Config{Hosts: hosts})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Start(t.Context(), "b", agent.VMSpec{ID: "v1", CPU: 1, MemoryMB: 64}); err != nil {
				t.Fatal(err)
			}
			tt.setup(d)
			if r, detail, err := d.CheckHost(t.Context(), "a", "b", "neighbour", nil); err != nil || r != tt.neighbour {
				t.Fatalf("neighbour: %s %q %v, want %s", r, detail, err, tt.neighbour)
			}
			if r, detail, err := d.CheckHost(t.Context(), "a", "b", "vm-activity", []string{"v1"}); err != nil || r != tt.active {
				t.Fatalf("vm-activity: %s %q %v, want %s", r, detail, err, tt.active)
			}
			// A crashed neighbour can neither check nor fence.
			if _, _, err := d.CheckHost(t.Context(), "b", "a", "neighbour", nil); (err == nil) != (tt.name == "healthy") {
				t.Fatalf("check from b: %v", err)
			}
			if err := d.Fence(t.Context(), "a", "b"); err != nil {
				t.Fatalf("fence: %v", err)
			}
			if _, err := d.PowerStates("b"); err == nil {
				t.Fatalf("fenced host still observable")
			}
			// Fencing cuts the power, not a partition.
			if err := d.RecoverHost("b"); err != nil || d.Heal("b") != nil {
				t.Fatal(err)
			}
			if st, err := d.PowerStates("b"); err != nil || st["v1"] != "PowerOff" {
				t.Fatalf("after recovery: %v %v", st, err)
			}
		})
	}
}
