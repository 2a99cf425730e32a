package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// TestAbortMigration: an AbortMigrateVm read while its live migration runs
// (3 s on these hosts) stops it at once, though the migration's command is
// still being carried out: the MigrateVm is answered failed and the VM runs
// on at its source. An abort read before its MigrateVm keeps it from
// running; one read after its MigrateVm was answered says it had ended.
func TestAbortMigration(t *testing.T) {
	simLatency = sim.Durations{Migrate: 3 * time.Second}
	t.Cleanup(func() { simLatency = sim.Durations{} })
	s := newStack(t, time.Hour, func(d *sim.Driver) {
		for _, vm := range []string{"v1", "v2"} {
			if err := d.Start(t.Context(), "h1", agent.VMSpec{ID: vm, CPU: 1, MemoryMB: 512}); err != nil {
				t.Fatal(err)
			}
		}
	})
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })

	sent := time.Now()
	s.send(&schemas.MigrateVm{AgentCommand: cmd("m1", "h1", "v1", 1), DestHostID: "h2", CPU: 1, MemoryMB: 512}, "h1")
	time.Sleep(300 * time.Millisecond)
	s.send(&schemas.AbortMigrateVm{AgentCommand: cmd("a1", "h1", "v1", 1), MigrateCommandID: "m1"}, "h1")
	abort := waitFor(s, 1, answerTo("a1"))[0]
	migrate := waitFor(s, 1, answerTo("m1"))[0]
	if took := time.Since(sent); took > 2500*time.Millisecond {
		t.Errorf("the aborted migration was answered after %v: it ran to its end", took)
	}
	// A failed MigrateVm reads the VM's power at the destination (where a
	// lost earlier delivery would have moved it): not there.
	if !abort.OK || migrate.OK || !strings.Contains(migrate.Error, "migration aborted") || migrate.PowerState == schemas.PowerOn {
		t.Fatalf("abort %+v, migrate %+v; want the abort ok and the migration failed, aborted, the VM not on h2", abort, migrate)
	}
	if st, err := s.drv.PowerState("h1", "v1"); err != nil || st != schemas.PowerOn {
		t.Fatalf("v1 on h1: %s %v; want it running at its source", st, err)
	}
	if got := s.drv.HostsOf("v1"); len(got) != 1 || got[0] != "h1" {
		t.Fatalf("v1 is held by %v; want h1 only", got)
	}

	// Read before its MigrateVm (both keyed by the source, so in order):
	// the migration never starts.
	sent = time.Now()
	s.send(&schemas.AbortMigrateVm{AgentCommand: cmd("a2", "h1", "v2", 1), MigrateCommandID: "m2"}, "h1")
	s.send(&schemas.MigrateVm{AgentCommand: cmd("m2", "h1", "v2", 1), DestHostID: "h2", CPU: 1, MemoryMB: 512}, "h1")
	if m2 := waitFor(s, 1, answerTo("m2"))[0]; m2.OK || !strings.Contains(m2.Error, "migration aborted") || time.Since(sent) > 2500*time.Millisecond {
		t.Fatalf("migrate m2 after its abort: %+v after %v", m2, time.Since(sent))
	}
	if got := s.drv.HostsOf("v2"); len(got) != 1 || got[0] != "h1" {
		t.Fatalf("v2 is held by %v; want h1 only", got)
	}

	// Read after its MigrateVm was answered: nothing to stop.
	s.send(&schemas.AbortMigrateVm{AgentCommand: cmd("a3", "h1", "v1", 1), MigrateCommandID: "m1"}, "h1")
	if a3 := waitFor(s, 1, answerTo("a3"))[0]; a3.OK || !strings.Contains(a3.Error, "had ended") {
		t.Fatalf("abort of an answered migration: %+v", a3)
	}
}

// TestAbortOutlivesARestart: an abort answered ok before its MigrateVm
// ran is kept in the answers file; read again after a restart, with its
// MigrateVm (whose offset could not be committed before), it keeps the
// migration from running once more.
func TestAbortOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	s := newStack(t, time.Hour, func(d *sim.Driver) {
		if err := d.Start(t.Context(), "h1", agent.VMSpec{ID: "v1", CPU: 1, MemoryMB: 512}); err != nil {
			t.Fatal(err)
		}
	}, func(c *agent.Config) { c.DataDir = dir })
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	abort := &schemas.AbortMigrateVm{AgentCommand: cmd("a1", "h1", "v1", 1), MigrateCommandID: "m1"}
	s.send(abort, "h1")
	if a := waitFor(s, 1, answerTo("a1"))[0]; !a.OK {
		t.Fatalf("abort before its migration: %+v", a)
	}
	s.restart(s.drv, nil)
	s.send(abort, "h1")
	s.send(&schemas.MigrateVm{AgentCommand: cmd("m1", "h1", "v1", 1), DestHostID: "h2", CPU: 1, MemoryMB: 512}, "h1")
	if m := waitFor(s, 1, answerTo("m1"))[0]; m.OK || !strings.Contains(m.Error, "migration aborted") {
		t.Fatalf("the aborted migration ran after a restart: %+v", m)
	}
	if got := s.drv.HostsOf("v1"); len(got) != 1 || got[0] != "h1" {
		t.Fatalf("v1 is held by %v; want h1 only", got)
	}
}

// TestAbortOfAMigrationCarriedOutBefore: a MigrateVm carried out, its
// answer lost with an agent restarted without an answers file, then
// aborted and read again: the host's ledger says it moved the VM, so the
// abort says the migration had ended and the MigrateVm is answered ok,
// the VM where it went.
func TestAbortOfAMigrationCarriedOutBefore(t *testing.T) {
	s := newStack(t, time.Hour, func(d *sim.Driver) {
		if err := d.Start(t.Context(), "h1", agent.VMSpec{ID: "v1", CPU: 1, MemoryMB: 512}); err != nil {
			t.Fatal(err)
		}
	})
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	migrate := &schemas.MigrateVm{AgentCommand: cmd("m1", "h1", "v1", 1), DestHostID: "h2", CPU: 1, MemoryMB: 512}
	s.send(migrate, "h1")
	if m := waitFor(s, 1, answerTo("m1"))[0]; !m.OK {
		t.Fatalf("migrate: %+v", m)
	}
	s.restart(s.drv, nil)
	s.send(&schemas.AbortMigrateVm{AgentCommand: cmd("a1", "h1", "v1", 1), MigrateCommandID: "m1"}, "h1")
	if a := waitFor(s, 1, answerTo("a1"))[0]; a.OK || !strings.Contains(a.Error, "had ended") {
		t.Fatalf("abort of a migration carried out before: %+v", a)
	}
	s.send(migrate, "h1")
	answers := waitFor(s, 2, answerTo("m1"))
	if m := answers[1]; !m.OK || m.PowerHost != "h2" || m.PowerState != schemas.PowerOn {
		t.Fatalf("the MigrateVm read again after its abort: %+v; want ok, the VM on h2", m)
	}
}
