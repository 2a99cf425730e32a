package agent_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// An expired command is answered without being carried out: a StartVm
// read after its job timed out starts nothing; one read in time does.
func TestExecuteRefusesExpiredCommands(t *testing.T) {
	d, err := sim.New(sim.Config{Hosts: []agent.HostInfo{{ID: "h1", Zone: "z1", CPU: 8, MemoryMB: 8192}}})
	if err != nil {
		t.Fatal(err)
	}
	peers := []string{"h1"}
	start := func(expires int64) *schemas.StartVm {
		id := fmt.Sprintf("c-%d", expires) // one command per case: a host does not carry one out twice
		return &schemas.StartVm{AgentCommand: schemas.AgentCommand{CommandID: id, HostID: "h1", VmID: "vm1", ExpiresAt: expires}, CPU: 1, MemoryMB: 512}
	}
	for _, tc := range []struct {
		name    string
		expires int64
		wantErr error
		want    string
	}{
		{"expired", 1000, agent.ErrExpired, ""},
		{"at its expiry", 2000, nil, schemas.PowerOn},
		{"no expiry", 0, nil, schemas.PowerOn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = d.Destroy(t.Context(), "h1", "vm1", nil)
			where, _, err := agent.Execute(t.Context(), d, start(tc.expires), 2000, peers)
			if !errors.Is(err, tc.wantErr) || where != "h1" {
				t.Fatalf("Execute: where %q, err %v; want h1, %v", where, err, tc.wantErr)
			}
			if got := d.Guests("h1")["vm1"]; got != tc.want {
				t.Fatalf("vm1 on h1 is %q, want %q", got, tc.want)
			}
		})
	}
}

// A StartVm of a VM that runs on another host of the same agent starts no
// second copy: an agent restarted without its answers reads an old StartVm
// again after the VM migrated on (found by the simulation, seed 48999).
// runningOnH1 is a driver of two hosts, h1 and h2, with vm1 started on h1
// by the StartVm returned.
func runningOnH1(t *testing.T) (*sim.Driver, []string, *schemas.StartVm) {
	t.Helper()
	hosts := []agent.HostInfo{{ID: "h1", Zone: "z1", CPU: 8, MemoryMB: 8192}, {ID: "h2", Zone: "z1", CPU: 8, MemoryMB: 8192}}
	d, err := sim.New(sim.Config{Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	peers := []string{"h1", "h2"}
	start := &schemas.StartVm{AgentCommand: schemas.AgentCommand{CommandID: "c1", HostID: "h1", VmID: "vm1"}, CPU: 1, MemoryMB: 512}
	if _, _, err := agent.Execute(t.Context(), d, start, 1000, peers); err != nil {
		t.Fatal(err)
	}
	return d, peers, start
}

func TestExecuteStartsNoSecondCopy(t *testing.T) {
	d, peers, start := runningOnH1(t)
	migrate := &schemas.MigrateVm{AgentCommand: schemas.AgentCommand{CommandID: "c2", HostID: "h1", VmID: "vm1"}, DestHostID: "h2", CPU: 1, MemoryMB: 512}
	if _, _, err := agent.Execute(t.Context(), d, migrate, 2000, peers); err != nil {
		t.Fatal(err)
	}
	// The same StartVm read again is one the host carried out (ledger.go);
	// another StartVm of the same job, for h1, is refused.
	if _, _, err := agent.Execute(t.Context(), d, start, 2500, peers); err != nil {
		t.Fatalf("the StartVm read again: %v", err)
	}
	again := &schemas.StartVm{AgentCommand: schemas.AgentCommand{CommandID: "c3", HostID: "h1", VmID: "vm1"}, CPU: 1, MemoryMB: 512}
	where, _, err := agent.Execute(t.Context(), d, again, 3000, peers)
	if err == nil || where != "h2" {
		t.Fatalf("another StartVm for h1: where %q, err %v; want a refusal naming h2", where, err)
	}
	if got := d.Guests("h1")["vm1"]; got != "" {
		t.Fatalf("a second copy on h1: %q", got)
	}
	if got := d.Guests("h2")["vm1"]; got != schemas.PowerOn {
		t.Fatalf("vm1 on h2 is %q, want PowerOn", got)
	}
}

// TestExecuteCheckVm: a CheckVm changes nothing and succeeds whether or not
// the host has the VM (the answer carries the power); a host that cannot be
// read fails it, so no answer says "absent" for a host nobody could see.
func TestExecuteCheckVm(t *testing.T) {
	d, peers, _ := runningOnH1(t)
	for _, host := range peers {
		check := &schemas.CheckVm{AgentCommand: schemas.AgentCommand{CommandID: "k-" + host, HostID: host, VmID: "vm1", ExpiresAt: 5000}}
		where, report, err := agent.Execute(t.Context(), d, check, 2000, peers)
		if err != nil || where != host || report {
			t.Fatalf("CheckVm on %s: where %q, report %v, err %v; want that host, no report, no error", host, where, report, err)
		}
	}
	if got := d.Guests("h1")["vm1"]; got != schemas.PowerOn {
		t.Fatalf("vm1 on h1 is %q after the checks, want PowerOn", got)
	}
	if got := d.Guests("h2")["vm1"]; got != "" {
		t.Fatalf("the check made vm1 on h2: %q", got)
	}
	if err := d.CrashHost("h2"); err != nil {
		t.Fatal(err)
	}
	check := &schemas.CheckVm{AgentCommand: schemas.AgentCommand{CommandID: "k3", HostID: "h2", VmID: "vm1", ExpiresAt: 5000}}
	if _, _, err := agent.Execute(t.Context(), d, check, 3000, peers); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Fatalf("CheckVm on a crashed host: err %v, want ErrHostUnreachable", err)
	}
}

// TestExecuteRefusesSupersededCommands: a Deploy's StartVm read again by an
// agent restarted without its answers, after a Stop of a newer job ran on
// the host, is refused and starts nothing; so is one read after a destroy,
// which would bring the VM back. A resend of the current job's command is
// carried out (found by the simulation, seed 40139).
func TestExecuteRefusesSupersededCommands(t *testing.T) {
	d, peers, start := runningOnH1(t) // epoch 0
	start.Epoch = 1
	if _, _, err := agent.Execute(t.Context(), d, start, 1000, peers); err != nil {
		t.Fatalf("the start resent: %v", err)
	}
	stop := &schemas.StopVm{AgentCommand: schemas.AgentCommand{CommandID: "c2", HostID: "h1", VmID: "vm1", Epoch: 2}, Force: true}
	if _, _, err := agent.Execute(t.Context(), d, stop, 2000, peers); err != nil {
		t.Fatal(err)
	}
	if _, _, err := agent.Execute(t.Context(), d, start, 3000, peers); !errors.Is(err, agent.ErrSuperseded) {
		t.Fatalf("the old StartVm read again: err %v, want ErrSuperseded", err)
	}
	if got := d.Guests("h1")["vm1"]; got != schemas.PowerOff {
		t.Fatalf("vm1 on h1 is %q after the replay, want PowerOff", got)
	}
	destroy := &schemas.DestroyVm{AgentCommand: schemas.AgentCommand{CommandID: "c3", HostID: "h1", VmID: "vm1", Epoch: 3}}
	if _, _, err := agent.Execute(t.Context(), d, destroy, 4000, peers); err != nil {
		t.Fatal(err)
	}
	start.Epoch = 2
	if _, _, err := agent.Execute(t.Context(), d, start, 5000, peers); !errors.Is(err, agent.ErrSuperseded) {
		t.Fatalf("a StartVm of epoch 2 after the destroy: err %v, want ErrSuperseded", err)
	}
	if got, ok := d.Guests("h1")["vm1"]; ok {
		t.Fatalf("the destroyed vm1 is back on h1: %q", got)
	}
}

// TestExecuteDoesNotRepeat: a StartVm the host carried out is not carried
// out again when read again (its answer lost with the agent's memory), even
// after the guest was shut down behind vmplane's back: it is answered as
// done, and the guest stays off (found by the simulation, seed 6956). A
// command that failed is carried out when sent again.
func TestExecuteDoesNotRepeat(t *testing.T) {
	d, peers, start := runningOnH1(t)
	if err := d.OutOfBand("h1", "vm1", schemas.PowerOff); err != nil {
		t.Fatal(err)
	}
	where, report, err := agent.Execute(t.Context(), d, start, 2000, peers)
	if err != nil || where != "h1" || report {
		t.Fatalf("the StartVm read again: where %q, report %v, err %v; want h1, no report, no error", where, report, err)
	}
	if got := d.Guests("h1")["vm1"]; got != schemas.PowerOff {
		t.Fatalf("vm1 on h1 is %q after the repeat, want PowerOff", got)
	}
	if err := d.CrashHost("h2"); err != nil {
		t.Fatal(err)
	}
	other := &schemas.StartVm{AgentCommand: schemas.AgentCommand{CommandID: "c9", HostID: "h2", VmID: "vm2", IssuedAt: time.Now().UnixMilli() - 1}, CPU: 1, MemoryMB: 512}
	if _, _, err := agent.Execute(t.Context(), d, other, 3000, peers); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Fatalf("a start on a crashed host: %v, want ErrHostUnreachable", err)
	}
	if err := d.RecoverHost("h2"); err != nil {
		t.Fatal(err)
	}
	// Issued before the host came back: void there (its job, failed on
	// the host's fencing, may have restarted the VM elsewhere).
	if _, _, err := agent.Execute(t.Context(), d, other, 4000, peers); !errors.Is(err, agent.ErrBeforeDown) {
		t.Fatalf("a start issued before the host came back: %v, want ErrBeforeDown", err)
	}
	if got, ok := d.Guests("h2")["vm2"]; ok {
		t.Fatalf("vm2 on h2 is %q, want none", got)
	}
	other.IssuedAt = time.Now().UnixMilli() + 1 // the job's resend
	if _, _, err := agent.Execute(t.Context(), d, other, 5000, peers); err != nil {
		t.Fatalf("the start sent again once the host is back: %v", err)
	}
	if got := d.Guests("h2")["vm2"]; got != schemas.PowerOn {
		t.Fatalf("vm2 on h2 is %q, want PowerOn", got)
	}
}
