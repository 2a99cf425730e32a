package sim

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

func powerOf(t *testing.T, d *Driver, host, vm string) string {
	t.Helper()
	st, err := d.PowerStates(host)
	if err != nil {
		t.Fatal(err)
	}
	return st[vm]
}

func TestLifecycleOperations(t *testing.T) {
	d := newSim(t, Config{})
	ctx := t.Context()
	if err := d.Start(ctx, "h1", agent.VMSpec{ID: "v1", CPU: 1, MemoryMB: 512}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		op    func() error
		want  string // power after
		wrong bool   // fails with ErrWrongPower
	}{
		{"reboot", func() error { return d.Reboot(ctx, "h1", "v1", false) }, schemas.PowerOn, false},
		{"pause", func() error { return d.Pause(ctx, "h1", "v1") }, schemas.PowerPaused, false},
		{"pause again", func() error { return d.Pause(ctx, "h1", "v1") }, schemas.PowerPaused, false},
		{"reboot paused", func() error { return d.Reboot(ctx, "h1", "v1", true) }, schemas.PowerPaused, true},
		{"suspend paused", func() error { return d.Suspend(ctx, "h1", "v1") }, schemas.PowerPaused, true},
		{"unpause", func() error { return d.Unpause(ctx, "h1", "v1") }, schemas.PowerOn, false},
		{"suspend", func() error { return d.Suspend(ctx, "h1", "v1") }, schemas.PowerSusp, false},
		{"resume", func() error { return d.Resume(ctx, "h1", "v1") }, schemas.PowerOn, false},
		{"rescue", func() error { return d.Rescue(ctx, "h1", "v1", "rescue.img") }, schemas.PowerOn, false},
		{"unrescue", func() error { return d.Unrescue(ctx, "h1", "v1") }, schemas.PowerOn, false},
		{"rebuild", func() error { return d.Rebuild(ctx, "h1", "v1", "debian", nil) }, schemas.PowerOn, false},
		{"snapshot", func() error { return d.Snapshot(ctx, "h1", "v1", "s1") }, schemas.PowerOn, false},
	}
	for _, s := range steps {
		err := s.op()
		if s.wrong != errors.Is(err, ErrWrongPower) || (!s.wrong && err != nil) {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := powerOf(t, d, "h1", "v1"); got != s.want {
			t.Fatalf("%s: power %s, want %s", s.name, got, s.want)
		}
	}
	if err := d.Pause(ctx, "h1", "ghost"); !errors.Is(err, agent.ErrUnknownVM) {
		t.Fatalf("pause of an unknown vm: %v", err)
	}
}

func TestMigrate(t *testing.T) {
	d := newSim(t, Config{})
	ctx := t.Context()
	for _, id := range []string{"v1", "v2"} {
		if err := d.Start(ctx, "h1", agent.VMSpec{ID: id, CPU: 1, MemoryMB: 512}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Migrate(ctx, "h1", "v1", "h2", agent.VMSpec{ID: "v1", CPU: 2, MemoryMB: 1024}); err != nil {
		t.Fatal(err)
	}
	if powerOf(t, d, "h1", "v1") != "" || powerOf(t, d, "h2", "v1") != schemas.PowerOn || powerOf(t, d, "h1", "v2") != schemas.PowerOn {
		t.Fatal("v1 did not move alone from h1 to h2")
	}
	// Into a crashed host: the VM stays where it was.
	if err := d.CrashHost("h1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx, "h2", "v1", "h1", agent.VMSpec{ID: "v1"}); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Fatalf("migrate into a crashed host: %v", err)
	}
	if powerOf(t, d, "h2", "v1") != schemas.PowerOn {
		t.Fatal("a failed migration lost the vm")
	}
	if err := d.OutOfBand("h2", "v1", schemas.PowerOff); err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx, "h2", "v1", "h1", agent.VMSpec{ID: "v1"}); !errors.Is(err, ErrWrongPower) {
		t.Fatalf("live migration of a stopped vm: %v", err)
	}
}

func TestLifecycleLatencyAndFailures(t *testing.T) {
	d := newSim(t, Config{Latency: Durations{Pause: 50 * time.Millisecond, Unpause: time.Hour}, FailureRate: Rates{Snapshot: 1}})
	ctx := t.Context()
	if err := d.Start(ctx, "h1", agent.VMSpec{ID: "v1"}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := d.Pause(ctx, "h1", "v1"); err != nil || time.Since(t0) < 50*time.Millisecond {
		t.Fatalf("pause took %v: %v", time.Since(t0), err)
	}
	if err := d.Snapshot(ctx, "h1", "v1", "s"); !errors.Is(err, ErrInjected) {
		t.Fatalf("snapshot at failure rate 1: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Unpause(cctx, "h1", "v1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("unpause with a cancelled context: %v", err)
	}
	if _, err := New(Config{Hosts: []agent.HostInfo{{ID: "h"}}, FailureRate: Rates{Migrate: 2}}); err == nil {
		t.Fatal("a failure rate above 1 was accepted")
	}
}

func TestControlHandler(t *testing.T) {
	d := newSim(t, Config{})
	if err := d.Start(t.Context(), "h1", agent.VMSpec{ID: "v1"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	for _, c := range []struct {
		path string
		code int
	}{
		{"/hosts/h1/vms/v1/power?state=Paused", http.StatusNoContent},
		{"/hosts/h1/vms/v1/power?state=Melted", http.StatusBadRequest},
		{"/hosts/h1/vms/nope/power?state=PowerOff", http.StatusNotFound},
		{"/hosts/h9/crash", http.StatusNotFound},
		{"/hosts/h2/partition", http.StatusNoContent},
		{"/hosts/h2/heal", http.StatusNoContent},
	} {
		resp, err := http.Post(srv.URL+c.path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("POST %s: %d, want %d", c.path, resp.StatusCode, c.code)
		}
	}
	if got := powerOf(t, d, "h1", "v1"); got != schemas.PowerPaused {
		t.Fatalf("after the out-of-band pause v1 is %s", got)
	}
	select {
	case c := <-d.Changes():
		if c.HostID != "h1" || c.VmID != "v1" {
			t.Fatalf("change %+v", c)
		}
	default:
		t.Fatal("the out-of-band pause was not signalled")
	}
}

// TestSnapshots: a snapshot is the VM's, by name; revert wants the VM off
// and the name; delete of a missing name succeeds; the names move with a
// live migration, go with a destroy and outlive the driver in its state
// file.
func TestSnapshots(t *testing.T) {
	cfg := stateConfig(t)
	d := newSim(t, cfg)
	ctx := t.Context()
	if err := d.Start(ctx, "h1", agent.VMSpec{ID: "v1", CPU: 1, MemoryMB: 512}); err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("snapshot a", d.Snapshot(ctx, "h1", "v1", "a"))
	must("snapshot b", d.Snapshot(ctx, "h1", "v1", "b"))
	must("snapshot a again", d.Snapshot(ctx, "h1", "v1", "a"))
	if err := d.RevertSnapshot(ctx, "h1", "v1", "a"); !errors.Is(err, ErrWrongPower) {
		t.Fatalf("revert of a running vm: %v", err)
	}
	must("migrate", d.Migrate(ctx, "h1", "v1", "h2", agent.VMSpec{ID: "v1"}))
	must("stop", d.Stop(ctx, "h2", "v1", true))
	must("revert on the destination", d.RevertSnapshot(ctx, "h2", "v1", "a"))
	must("delete b", d.DeleteSnapshot(ctx, "h2", "v1", "b"))
	must("delete b again", d.DeleteSnapshot(ctx, "h2", "v1", "b"))
	if err := d.RevertSnapshot(ctx, "h2", "v1", "b"); !errors.Is(err, agent.ErrUnknownSnapshot) {
		t.Fatalf("revert to a deleted snapshot: %v", err)
	}
	again := newSim(t, cfg)
	must("revert after a restart", again.RevertSnapshot(ctx, "h2", "v1", "a"))
	must("destroy", again.Destroy(ctx, "h2", "v1", nil))
	must("start anew", again.Start(ctx, "h2", agent.VMSpec{ID: "v1", CPU: 1, MemoryMB: 512}))
	must("stop anew", again.Stop(ctx, "h2", "v1", true))
	if err := again.RevertSnapshot(ctx, "h2", "v1", "a"); !errors.Is(err, agent.ErrUnknownSnapshot) {
		t.Fatalf("revert after the destroy: %v", err)
	}
}
