package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

func newSim(t testing.TB, cfg Config) *Driver {
	t.Helper()
	if len(cfg.Hosts) == 0 && cfg.Layout.Zone == "" {
		cfg.Hosts = []agent.HostInfo{{ID: "h1"}, {ID: "h2"}}
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func spec(id string) agent.VMSpec { return agent.VMSpec{ID: id, Name: id, CPU: 2, MemoryMB: 2048} }

func TestLayout(t *testing.T) {
	d := newSim(t, Config{Layout: Layout{Zone: "z1", Pods: 2, ClustersPerPod: 3, HostsPerCluster: 4, CPU: 32, MemoryMB: 65536, Tags: []string{"ssd"}}})
	hosts := d.Hosts()
	if len(hosts) != 24 {
		t.Fatalf("%d hosts, want 24", len(hosts))
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		if seen[h.ID] {
			t.Fatalf("duplicate host id %s", h.ID)
		}
		seen[h.ID] = true
		if h.Zone != "z1" || h.CPU != 32 || h.MemoryMB != 65536 || h.Hypervisor != "sim" || len(h.Tags) != 1 {
			t.Fatalf("host %+v", h)
		}
	}
	if h := hosts[23]; h.ID != "z1-p2-c3-h4" || h.Pod != "z1-p2" || h.Cluster != "z1-p2-c3" {
		t.Fatalf("last host %+v", h)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no hosts":      {},
		"duplicate id":  {Hosts: []agent.HostInfo{{ID: "a"}, {ID: "a"}}},
		"empty id":      {Hosts: []agent.HostInfo{{ID: ""}}},
		"jitter":        {Hosts: []agent.HostInfo{{ID: "a"}}, Jitter: 2},
		"failure rate":  {Hosts: []agent.HostInfo{{ID: "a"}}, FailureRate: Rates{Stop: -0.1}},
		"layout counts": {Layout: Layout{Zone: "z", Pods: 1}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestOperations(t *testing.T) {
	ctx := t.Context()
	d := newSim(t, Config{})
	states := func(host string) map[string]string {
		t.Helper()
		s, err := d.PowerStates(host)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := d.Start(ctx, "h1", spec(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Start(ctx, "h1", spec("a")); err != nil {
		t.Fatalf("starting a running vm: %v", err)
	}
	if err := d.Stop(ctx, "h1", "b", false); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx, "h1", "b", true); err != nil {
		t.Fatalf("stopping a stopped vm: %v", err)
	}
	if got := states("h1"); len(got) != 3 || got["a"] != schemas.PowerOn || got["b"] != schemas.PowerOff {
		t.Fatalf("states %v", got)
	}
	// Destroying the first VM moves the last into its slot; the moved VM
	// must stay addressable.
	if err := d.Destroy(ctx, "h1", "a", nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx, "h1", "c", false); err != nil {
		t.Fatalf("stop the moved vm: %v", err)
	}
	if got := states("h1"); len(got) != 2 || got["c"] != schemas.PowerOff {
		t.Fatalf("states after destroy %v", got)
	}
	if got := states("h2"); len(got) != 0 {
		t.Fatalf("h2 states %v", got)
	}

	errCases := []struct {
		name string
		err  error
		want error
	}{
		{"start on unknown host", d.Start(ctx, "nope", spec("x")), agent.ErrUnknownHost},
		{"stop unknown vm", d.Stop(ctx, "h1", "x", false), agent.ErrUnknownVM},
		{"destroy unknown vm", d.Destroy(ctx, "h1", "a", nil), agent.ErrUnknownVM},
		{"destroy on unknown host", d.Destroy(ctx, "nope", "a", nil), agent.ErrUnknownHost},
		{"out of band unknown vm", d.OutOfBand("h1", "x", schemas.PowerOff), agent.ErrUnknownVM},
		{"crash unknown host", d.CrashHost("nope"), agent.ErrUnknownHost},
	}
	for _, c := range errCases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if _, err := d.PowerStates("nope"); !errors.Is(err, agent.ErrUnknownHost) {
		t.Errorf("power states of unknown host: %v", err)
	}
	if s, err := d.PowerState("h1", "c"); err != nil || s != schemas.PowerOff {
		t.Errorf("power state of the moved vm: %q %v", s, err)
	}
	if s, err := d.PowerState("h1", "b"); err != nil || s != schemas.PowerOff {
		t.Errorf("power state of b: %q %v", s, err)
	}
	if _, err := d.PowerState("h1", "a"); !errors.Is(err, agent.ErrUnknownVM) {
		t.Errorf("power state of a destroyed vm: %v", err)
	}
	if _, err := d.PowerState("h2", "c"); !errors.Is(err, agent.ErrUnknownVM) {
		t.Errorf("power state of a vm on another host: %v", err)
	}
	if _, err := d.PowerState("nope", "c"); !errors.Is(err, agent.ErrUnknownHost) {
		t.Errorf("power state on an unknown host: %v", err)
	}
	if err := d.OutOfBand("h1", "b", "Exploded"); err == nil {
		t.Error("out of band with an unknown state: no error")
	}
}

func TestFailureRate(t *testing.T) {
	run := func(seed uint64) []bool {
		d := newSim(t, Config{FailureRate: Rates{Start: 0.3}, Seed: seed})
		out := make([]bool, 4000)
		for i := range out {
			err := d.Start(t.Context(), "h1", spec(fmt.Sprint("vm", i)))
			if err != nil && !errors.Is(err, ErrInjected) {
				t.Fatal(err)
			}
			out[i] = err != nil
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	failed := 0
	for _, f := range a {
		if f {
			failed++
		}
	}
	if r := float64(failed) / float64(len(a)); r < 0.26 || r > 0.34 {
		t.Fatalf("failure ratio %.3f, want about 0.3", r)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("same seed, different failures")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("different seeds, same failures")
	}
	// A failed start changes nothing; stop never fails at rate 0.
	d := newSim(t, Config{FailureRate: Rates{Start: 1}})
	if err := d.Start(t.Context(), "h1", spec("a")); !errors.Is(err, ErrInjected) {
		t.Fatalf("start at rate 1: %v", err)
	}
	if s, _ := d.PowerStates("h1"); len(s) != 0 {
		t.Fatalf("failed start left %v", s)
	}
}

func TestLatency(t *testing.T) {
	d := newSim(t, Config{Latency: Durations{Start: 40 * time.Millisecond}, Jitter: 0.5, Seed: 1})
	var lo, hi time.Duration = time.Hour, 0
	for i := range 10 {
		t0 := time.Now()
		if err := d.Start(t.Context(), "h1", spec(fmt.Sprint("vm", i))); err != nil {
			t.Fatal(err)
		}
		el := time.Since(t0)
		lo, hi = min(lo, el), max(hi, el)
	}
	if lo < 20*time.Millisecond || hi > 200*time.Millisecond {
		t.Fatalf("latency between %v and %v, want 20ms..60ms (+ scheduling)", lo, hi)
	}
	if hi-lo < 2*time.Millisecond {
		t.Fatalf("no jitter: %v..%v", lo, hi)
	}
	// Stop has no latency configured.
	t0 := time.Now()
	if err := d.Stop(t.Context(), "h1", "vm0", false); err != nil || time.Since(t0) > 15*time.Millisecond {
		t.Fatalf("stop took %v: %v", time.Since(t0), err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
	defer cancel()
	if err := d.Start(ctx, "h1", spec("late")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("start past its context: %v", err)
	}
}

func TestCrashAndPartition(t *testing.T) {
	ctx := t.Context()
	d := newSim(t, Config{})
	for _, h := range []string{"h1", "h2"} {
		if err := d.Start(ctx, h, spec("vm-"+h)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CrashHost("h1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Partition("h2"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"h1", "h2"} {
		if _, err := d.PowerStates(h); !errors.Is(err, agent.ErrHostUnreachable) {
			t.Errorf("power states of %s: %v", h, err)
		}
		if _, err := d.PowerState(h, "vm-"+h); !errors.Is(err, agent.ErrHostUnreachable) {
			t.Errorf("power state on %s: %v", h, err)
		}
		if err := d.Start(ctx, h, spec("new")); !errors.Is(err, agent.ErrHostUnreachable) {
			t.Errorf("start on %s: %v", h, err)
		}
		if err := d.Stop(ctx, h, "vm-"+h, false); !errors.Is(err, agent.ErrHostUnreachable) {
			t.Errorf("stop on %s: %v", h, err)
		}
	}
	if err := d.RecoverHost("h1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Heal("h2"); err != nil {
		t.Fatal(err)
	}
	// A crash kills the VMs; a partition leaves them running.
	if s, err := d.PowerStates("h1"); err != nil || s["vm-h1"] != schemas.PowerOff || len(s) != 1 {
		t.Errorf("h1 after recovery: %v %v", s, err)
	}
	if s, err := d.PowerStates("h2"); err != nil || s["vm-h2"] != schemas.PowerOn || len(s) != 1 {
		t.Errorf("h2 after heal: %v %v", s, err)
	}
	if s, err := d.PowerState("h2", "vm-h2"); err != nil || s != schemas.PowerOn {
		t.Errorf("vm-h2 after heal: %q %v", s, err)
	}
}

func TestOutOfBand(t *testing.T) {
	d := newSim(t, Config{ChangeBuffer: 1})
	if err := d.Start(t.Context(), "h2", spec("a")); err != nil {
		t.Fatal(err)
	}
	if err := d.OutOfBand("h2", "a", schemas.PowerPaused); err != nil {
		t.Fatal(err)
	}
	// The buffer is full: a second change is dropped rather than blocking.
	if err := d.OutOfBand("h2", "a", schemas.PowerOff); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-d.Changes():
		if c != (agent.Change{HostID: "h2", VmID: "a"}) {
			t.Fatalf("change %+v", c)
		}
	default:
		t.Fatal("no change signalled")
	}
	select {
	case c := <-d.Changes():
		t.Fatalf("second change %+v not dropped", c)
	default:
	}
	if s, _ := d.PowerStates("h2"); s["a"] != schemas.PowerOff {
		t.Fatalf("state %v", s)
	}
}

// BenchmarkSimHosts10kx50 measures the heap of 10,000 hosts running 50 VMs
// each (the scale one agent process must hold in 4 GiB).
func BenchmarkSimHosts10kx50(b *testing.B) {
	const hosts, perHost = 10000, 50
	var perVM float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d, err := New(Config{Layout: Layout{Zone: "bench", Pods: 10, ClustersPerPod: 10, HostsPerCluster: hosts / 100, CPU: 64, MemoryMB: 262144}})
		if err != nil {
			b.Fatal(err)
		}
		for _, h := range d.Hosts() {
			for v := range perHost {
				if err := d.Start(b.Context(), h.ID, agent.VMSpec{ID: fmt.Sprintf("%s-vm%02d", h.ID, v), CPU: 2, MemoryMB: 4096}); err != nil {
					b.Fatal(err)
				}
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perVM = float64(after.HeapAlloc-before.HeapAlloc) / (hosts * perHost)
		runtime.KeepAlive(d)
	}
	b.ReportMetric(perVM, "bytes/vm")
	b.ReportMetric(perVM*hosts*perHost/(1<<20), "MiB/10kx50")
}
