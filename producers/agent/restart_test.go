package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// countingDriver counts the commands that reach the driver.
type countingDriver struct {
	agent.Driver
	calls atomic.Int32
}

func (d *countingDriver) Start(ctx context.Context, host string, vm agent.VMSpec) error {
	d.calls.Add(1)
	return d.Driver.Start(ctx, host, vm)
}

func (d *countingDriver) Reboot(ctx context.Context, host, vm string, hard bool) error {
	d.calls.Add(1)
	return d.Driver.Reboot(ctx, host, vm, hard)
}

// TestAnsweredCommandSurvivesRestart: an agent killed after answering a
// command but before its offset was committed gets the command again once
// restarted. With a data directory the new agent answers it with the first
// answer and the driver never sees it, also when the kill tore the answers
// file's last line.
func TestAnsweredCommandSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := newStack(t, time.Hour, nil, func(c *agent.Config) { c.DataDir = dir })
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	s.send(&schemas.StartVm{AgentCommand: cmd("c1", "h2", "v1", 3), CPU: 1, MemoryMB: 256}, "h2")
	first := waitFor(s, 1, answerTo("c1"))[0]
	// Power the VM off behind the agent's back: executing c1 again would
	// power it on.
	if err := s.drv.OutOfBand("h2", "v1", schemas.PowerOff); err != nil {
		t.Fatal(err)
	}

	counting := &countingDriver{Driver: s.drv}
	s.restart(counting, func() {
		// The kill came before the commit: the group's offsets go back to
		// the start, so c1 is delivered again. And it came during an
		// append, which left half a line.
		rewindOffsets(t, s)
		f, err := os.OpenFile(filepath.Join(dir, "answers-a1.log"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(`0badc0de {"answer":{"CommandID":"c`); err != nil {
			t.Fatal(err)
		}
		f.Close()
	})
	again := waitFor(s, 2, answerTo("c1"))[1]
	if *again != *first {
		t.Fatalf("answered again with %+v, first answer %+v", again, first)
	}
	// A later command on the same VM is executed, after the repeat.
	s.send(&schemas.RebootVm{AgentCommand: cmd("c2", "h2", "v1", 3)}, "h2")
	if a := waitFor(s, 1, answerTo("c2"))[0]; a.OK || a.PowerState != schemas.PowerOff {
		t.Fatalf("reboot of the stopped vm answered %+v", a)
	}
	if n := counting.calls.Load(); n != 1 {
		t.Fatalf("%d driver calls after the restart, want 1 (the reboot; c1 must not run again)", n)
	}
	if st, _ := s.drv.PowerState("h2", "v1"); st != schemas.PowerOff {
		t.Fatalf("c1 ran again: v1 is %s", st)
	}
}

// rewindOffsets commits offset 0 on every partition of agent.commands.v1
// for the stopped agent's group, as if it had never committed.
func rewindOffsets(t *testing.T, s *stack) {
	t.Helper()
	adm := kadm.NewClient(s.cl)
	ends, err := adm.ListEndOffsets(t.Context(), schemas.TopicAgentCommands)
	if err != nil {
		t.Fatal(err)
	}
	// The agent is a static member, which a stop does not take out of the
	// group; offsets of a group with members cannot be set from outside.
	if _, err := adm.LeaveGroup(t.Context(), kadm.LeaveGroup(s.agent.Group()).InstanceIDs(s.agent.Group())); err != nil {
		t.Fatalf("take the stopped agent out of its group: %v", err)
	}
	var zero kadm.Offsets
	ends.Each(func(e kadm.ListedOffset) {
		zero.Add(kadm.Offset{Topic: e.Topic, Partition: e.Partition, At: 0, LeaderEpoch: -1})
	})
	resp, err := adm.CommitOffsets(t.Context(), s.agent.Group(), zero)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("rewind the agent's offsets: %v", err)
	}
}

// TestCommandCutOffByShutdownComesAgain: a command still running when the
// shutdown grace runs out is not answered, so its offset is not committed:
// the agent's next run gets it again and answers it.
func TestCommandCutOffByShutdownComesAgain(t *testing.T) {
	simLatency = sim.Durations{Start: 5 * time.Second}
	t.Cleanup(func() { simLatency = sim.Durations{} })
	s := newStack(t, time.Hour, nil, func(c *agent.Config) { c.ShutdownGrace = 300 * time.Millisecond })
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	s.send(&schemas.StartVm{AgentCommand: cmd("c1", "h1", "v1", 1), CPU: 1, MemoryMB: 256}, "h1")
	time.Sleep(time.Second) // polled, and starting on the driver

	quick, err := sim.New(sim.Config{Hosts: testHosts})
	if err != nil {
		t.Fatal(err)
	}
	s.restart(quick, func() {
		if n := len(records(s, answerTo("c1"))); n != 0 {
			t.Fatalf("c1 answered %d times before the grace ran out", n)
		}
	})
	if a := waitFor(s, 1, answerTo("c1"))[0]; !a.OK || a.PowerState != schemas.PowerOn {
		t.Fatalf("c1 answered %+v after the restart; want it started", a)
	}
}
