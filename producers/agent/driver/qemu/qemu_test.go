package qemu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

func newDriver(t *testing.T) *Driver {
	t.Helper()
	return newDriverOn(t, guestDir(t), "q1", "q2")
}

// guestDir is a new Config.Dir; every QEMU whose pid file lies under it is
// killed when the test ends, whoever started it.
func guestDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed")
	}
	if testing.Short() {
		t.Skip("starts real QEMU processes")
	}
	// Short paths: unix socket names are limited to 107 bytes.
	dir, err := os.MkdirTemp("", "vmq")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Cleanup(func() { killGuests(t, dir) })
	return dir
}

// newDriverOn returns a driver of hosts on dir, closed when the test ends.
func newDriverOn(t *testing.T, dir string, hosts ...string) *Driver {
	t.Helper()
	d, err := New(testConfig(dir, hosts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func testConfig(dir string, hosts ...string) Config {
	// VMPLANE_QEMU_ACCEL=tcg forces TCG where /dev/kvm works.
	cfg := Config{Dir: dir, Accel: os.Getenv("VMPLANE_QEMU_ACCEL"), StopTimeout: 300 * time.Millisecond}
	for _, h := range hosts {
		cfg.Hosts = append(cfg.Hosts, agent.HostInfo{ID: h, Cluster: "c", CPU: 2, MemoryMB: 512})
	}
	return cfg
}

// power reads the VM's state both ways, the host's map and the one VM,
// and fails when they disagree.
func power(t *testing.T, d *Driver, host, vm string) string {
	t.Helper()
	st, err := d.PowerStates(host)
	if err != nil {
		t.Fatal(err)
	}
	one, err := d.PowerState(host, vm)
	s, ok := st[vm]
	switch {
	case !ok && errors.Is(err, agent.ErrUnknownVM):
		return "absent"
	case !ok || err != nil || one != s:
		t.Fatalf("%s on %s: PowerStates %q (listed %v), PowerState %q, %v", vm, host, s, ok, one, err)
	}
	return s
}

func expect(t *testing.T, d *Driver, host, vm, want string) {
	t.Helper()
	if got := power(t, d, host, vm); got != want {
		t.Fatalf("%s on %s: %s, want %s", vm, host, got, want)
	}
}

// TestLifecycle drives one guest through every operation against real QEMU.
func TestLifecycle(t *testing.T) {
	d := newDriver(t)
	ctx := t.Context()
	spec := agent.VMSpec{ID: "vm1", Name: "web", CPU: 1, MemoryMB: 64}
	start := time.Now()
	steps := []struct {
		name       string
		do         func() error
		host, want string
	}{
		{"start", func() error { return d.Start(ctx, "q1", spec) }, "q1", schemas.PowerOn},
		{"start again", func() error { return d.Start(ctx, "q1", spec) }, "q1", schemas.PowerOn},
		{"pause", func() error { return d.Pause(ctx, "q1", "vm1") }, "q1", schemas.PowerPaused},
		{"unpause", func() error { return d.Unpause(ctx, "q1", "vm1") }, "q1", schemas.PowerOn},
		{"reboot", func() error { return d.Reboot(ctx, "q1", "vm1", false) }, "q1", schemas.PowerOn},
		{"snapshot", func() error { return d.Snapshot(ctx, "q1", "vm1", "before") }, "q1", schemas.PowerOn},
		{"snapshot another", func() error { return d.Snapshot(ctx, "q1", "vm1", "other") }, "q1", schemas.PowerOn},
		{"delete a snapshot while running", func() error { return d.DeleteSnapshot(ctx, "q1", "vm1", "other") }, "q1", schemas.PowerOn},
		{"suspend", func() error { return d.Suspend(ctx, "q1", "vm1") }, "q1", schemas.PowerSusp},
		{"resume", func() error { return d.Resume(ctx, "q1", "vm1") }, "q1", schemas.PowerOn},
		{"stop (the guest ignores ACPI: quit after the timeout)", func() error { return d.Stop(ctx, "q1", "vm1", false) }, "q1", schemas.PowerOff},
		{"stop again", func() error { return d.Stop(ctx, "q1", "vm1", true) }, "q1", schemas.PowerOff},
		{"revert while off", func() error { return d.RevertSnapshot(ctx, "q1", "vm1", "before") }, "q1", schemas.PowerOff},
		{"delete while off", func() error { return d.DeleteSnapshot(ctx, "q1", "vm1", "before") }, "q1", schemas.PowerOff},
		{"delete what is gone", func() error { return d.DeleteSnapshot(ctx, "q1", "vm1", "before") }, "q1", schemas.PowerOff},
		{"start after stop", func() error { return d.Start(ctx, "q1", spec) }, "q1", schemas.PowerOn},
		{"rescue", func() error { return d.Rescue(ctx, "q1", "vm1", "rescue") }, "q1", schemas.PowerOn},
		{"unrescue", func() error { return d.Unrescue(ctx, "q1", "vm1") }, "q1", schemas.PowerOn},
		{"live migrate to q2", func() error { return d.Migrate(ctx, "q1", "vm1", "q2", spec) }, "q2", schemas.PowerOn},
		{"gone from q1", func() error { return nil }, "q1", "absent"},
		{"pause on q2", func() error { return d.Pause(ctx, "q2", "vm1") }, "q2", schemas.PowerPaused},
		{"migrate a paused guest back", func() error { return d.Migrate(ctx, "q2", "vm1", "q1", spec) }, "q1", schemas.PowerPaused},
		{"rebuild", func() error { return d.Rebuild(ctx, "q1", "vm1", "img", nil) }, "q1", schemas.PowerOn},
		{"terminate", func() error { return d.Destroy(ctx, "q1", "vm1", nil) }, "q1", "absent"},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		expect(t, d, s.host, "vm1", s.want)
		switch s.name {
		case "snapshot":
			names, err := d.Snapshots(ctx, "q1", "vm1")
			if err != nil || !slices.Contains(names, "before") {
				t.Fatalf("snapshots %v %v", names, err)
			}
		case "delete what is gone":
			names, err := d.Snapshots(ctx, "q1", "vm1")
			if err != nil || len(names) != 0 {
				t.Fatalf("snapshots after deleting both: %v %v", names, err)
			}
			if err := d.RevertSnapshot(ctx, "q1", "vm1", "before"); !errors.Is(err, agent.ErrUnknownSnapshot) {
				t.Fatalf("revert to a deleted snapshot: %v", err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(d.cfg.Dir, "vm1")); !os.IsNotExist(err) {
		t.Fatalf("directory left after destroy: %v", err)
	}
	t.Logf("accel %s: %d steps in %v", d.Accel(), len(steps), time.Since(start).Round(time.Millisecond))
}

// TestOutOfBandQuit quits a guest through its operator QMP socket, behind
// the driver's back: the driver must signal the change within a second and
// report it off.
func TestOutOfBandQuit(t *testing.T) {
	d := newDriver(t)
	ctx := t.Context()
	if err := d.Start(ctx, "q1", agent.VMSpec{ID: "vm2", MemoryMB: 64}); err != nil {
		t.Fatal(err)
	}
	ext, err := Dial(ctx, filepath.Join(d.cfg.Dir, "vm2", "ext.qmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	// An out-of-band pause first: seen through our monitor's STOP event.
	if _, err := ext.Execute(ctx, "stop", nil); err != nil {
		t.Fatal(err)
	}
	waitChange(t, d, "vm2")
	expect(t, d, "q1", "vm2", schemas.PowerPaused)

	for len(d.Changes()) > 0 {
		<-d.Changes() // only the quit's change counts below
	}
	at := time.Now()
	ext.Execute(ctx, "quit", nil)
	seen := waitChange(t, d, "vm2").Sub(at)
	if seen > time.Second {
		t.Fatalf("quit seen after %v", seen)
	}
	expect(t, d, "q1", "vm2", schemas.PowerOff)
	t.Logf("out-of-band quit seen after %v", seen.Round(time.Millisecond))
}

// waitChange returns when the change for vm arrived.
func waitChange(t *testing.T, d *Driver, vm string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	for {
		select {
		case c := <-d.Changes():
			if c.VmID == vm {
				at := time.Now()
				// Let a burst of events (STOP then SHUTDOWN) settle.
				time.Sleep(50 * time.Millisecond)
				return at
			}
		case <-ctx.Done():
			t.Fatalf("no change for %s", vm)
		}
	}
}
