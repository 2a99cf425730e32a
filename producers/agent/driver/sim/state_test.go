package sim

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

func stateConfig(t testing.TB) Config {
	return Config{Hosts: []agent.HostInfo{{ID: "h1"}, {ID: "h2"}, {ID: "h3"}}, StateFile: filepath.Join(t.TempDir(), "state", "sim.json")}
}

// TestStateSurvivesRestart: a new Driver on the same state file finds every
// VM where the last one left it, in the same power state, and its hosts as
// crashed or partitioned as they were.
func TestStateSurvivesRestart(t *testing.T) {
	ctx := t.Context()
	cfg := stateConfig(t)
	d := newSim(t, cfg)
	for _, id := range []string{"a", "b", "c", "gone"} {
		if err := d.Start(ctx, "h1", spec(id)); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Stop(ctx, "h1", "b", false))
	must(d.Pause(ctx, "h1", "c"))
	must(d.Destroy(ctx, "h1", "gone", nil))
	must(d.Migrate(ctx, "h1", "a", "h2", agent.VMSpec{CPU: 4, MemoryMB: 8192}))
	must(d.Rescue(ctx, "h2", "a", "rescue.img"))
	must(d.Start(ctx, "h3", spec("d")))
	must(d.OutOfBand("h3", "d", schemas.PowerSusp))
	must(d.Partition("h3"))
	// A save killed before its rename leaves a temp file behind.
	must(os.WriteFile(cfg.StateFile+".tmp", []byte(`{"hosts":[{"id":"h1","vms":[{"id":"torn"`), 0o644))

	d2 := newSim(t, cfg)
	if got, want := d2.snapshot(), d.snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored state\n%+v\nwant\n%+v", got, want)
	}
	if got := powerOf(t, d2, "h1", "b"); got != schemas.PowerOff {
		t.Fatalf("b is %s after the restart", got)
	}
	if got := powerOf(t, d2, "h1", "c"); got != schemas.PowerPaused {
		t.Fatalf("c is %s after the restart", got)
	}
	if got := powerOf(t, d2, "h2", "a"); got != schemas.PowerOn {
		t.Fatalf("a is %s after the restart", got)
	}
	if _, err := d2.PowerState("h1", "gone"); !errors.Is(err, agent.ErrUnknownVM) {
		t.Fatalf("the destroyed vm came back: %v", err)
	}
	if _, err := d2.PowerStates("h3"); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Fatalf("the partitioned host is reachable after the restart: %v", err)
	}
	must(d2.Heal("h3"))
	if got := powerOf(t, d2, "h3", "d"); got != schemas.PowerSusp {
		t.Fatalf("d is %s after the heal", got)
	}
	// Operations go on from the restored state: a running VM starts as a
	// no-op, the suspended one resumes.
	must(d2.Start(ctx, "h2", spec("a")))
	must(d2.Resume(ctx, "h3", "d"))
	if got := powerOf(t, newSim(t, cfg), "h3", "d"); got != schemas.PowerOn {
		t.Fatalf("d is %s after a resume and another restart", got)
	}
}

// TestStateConcurrentSaves: operations that save at once share saves, and
// each one that returned success is in the file.
func TestStateConcurrentSaves(t *testing.T) {
	cfg := stateConfig(t)
	d := newSim(t, cfg)
	const n = 60
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			host := fmt.Sprintf("h%d", i%3+1)
			if err := d.Start(t.Context(), host, spec(fmt.Sprintf("v%d", i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	d2 := newSim(t, cfg)
	total := 0
	for _, h := range []string{"h1", "h2", "h3"} {
		st, err := d2.PowerStates(h)
		if err != nil {
			t.Fatal(err)
		}
		total += len(st)
	}
	if total != n {
		t.Fatalf("%d vms after the restart, want %d", total, n)
	}
}

// TestStateCrashAndRecoverThroughControls: a host crashed through the
// control API stays down, its VMs off, across a restart, until it is
// recovered; the recovery survives the next restart too.
func TestStateCrashAndRecoverThroughControls(t *testing.T) {
	cfg := stateConfig(t)
	d := newSim(t, cfg)
	for _, id := range []string{"a", "b"} {
		if err := d.Start(t.Context(), "h1", spec(id)); err != nil {
			t.Fatal(err)
		}
	}
	post := func(d *Driver, path string) {
		t.Helper()
		srv := httptest.NewServer(d.Handler())
		defer srv.Close()
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	post(d, "/hosts/h1/crash")

	d = newSim(t, cfg)
	if _, err := d.PowerStates("h1"); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Fatalf("the crashed host is reachable after the restart: %v", err)
	}
	if err := d.Start(t.Context(), "h1", spec("c")); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Fatalf("start on the crashed host: %v", err)
	}
	post(d, "/hosts/h1/recover")

	d = newSim(t, cfg)
	got, err := d.PowerStates("h1")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": schemas.PowerOff, "b": schemas.PowerOff}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after crash, recover and restarts h1 has %v, want %v", got, want)
	}
	if up, err := d.UpSince("h1"); err != nil || up == 0 {
		t.Fatalf("h1 up since %d (%v) after its recovery and a restart, want its recovery time", up, err)
	}
}

// TestStateKeepsLedgers: a VM's command ledger outlives the driver, as the
// guests do, and the VM itself.
func TestStateKeepsLedgers(t *testing.T) {
	cfg := stateConfig(t)
	d := newSim(t, cfg)
	want := agent.Ledger{Epoch: 4, Done: []string{"c4-1"}}
	if err := d.SetLedger("h2", "gone", want); err != nil {
		t.Fatal(err)
	}
	d = newSim(t, cfg)
	if got, err := d.Ledger("h2", "gone"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ledger after a restart: %+v (%v), want %+v", got, err, want)
	}
}

// TestStateFileErrors: a state file that cannot be read stops New; hosts
// the configuration no longer has are left out.
func TestStateFileErrors(t *testing.T) {
	cfg := stateConfig(t)
	if err := os.MkdirAll(filepath.Dir(cfg.StateFile), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg.StateFile, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"hosts":[{"id":"h1","vms":[{"id":"a","power":"Melted"}]}]}`)
	if _, err := New(cfg); err == nil {
		t.Fatal("an unknown power state was loaded")
	}
	write(`{"hosts":`)
	if _, err := New(cfg); err == nil {
		t.Fatal("a truncated state file was loaded")
	}
	write(`{"hosts":[{"id":"old","vms":[{"id":"a","power":"PowerOn"}]},{"id":"h2","vms":[{"id":"b","power":"PowerOn"}]}]}`)
	d := newSim(t, cfg)
	if got := powerOf(t, d, "h2", "b"); got != schemas.PowerOn {
		t.Fatalf("b is %s", got)
	}
}

// BenchmarkStateFile is the cost of a start and a stop with and without a
// state file (three hosts, a few VMs).
func BenchmarkStateFile(b *testing.B) {
	for _, withFile := range []bool{false, true} {
		name := "memory"
		cfg := stateConfig(b)
		if !withFile {
			cfg.StateFile = ""
		} else {
			name = "file"
		}
		b.Run(name, func(b *testing.B) {
			d := newSim(b, cfg)
			for b.Loop() {
				if err := d.Start(b.Context(), "h1", spec("a")); err != nil {
					b.Fatal(err)
				}
				if err := d.Stop(b.Context(), "h1", "a", true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
