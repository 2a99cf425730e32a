package harness

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProbeMeasuresTheMachine(t *testing.T) {
	mibps, err := freshMemory(16)
	if err != nil {
		t.Fatal(err)
	}
	// A first touch of 16 MiB is neither free nor a minute long.
	if math.IsInf(mibps, 0) || math.IsNaN(mibps) || mibps < 16.0/60 {
		t.Errorf("fresh memory %v MiB/s", mibps)
	}
	rtt, err := loopbackRoundTrip(200)
	if err != nil {
		t.Fatal(err)
	}
	if rtt <= 0 || rtt > time.Second {
		t.Errorf("loopback round trip %v", rtt)
	}
}

func TestProbeInHistoryRow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe Probe
		want  string
	}{
		{"probed", Probe{FreshMemoryMiBps: 310.4, LoopbackRoundTripMicros: 21.46}, "| 2 cores, 24105 MiB; fresh memory 310 MiB/s, loopback round trip 21.5 µs |"},
		{"not probed", Probe{}, "| 2 cores, 24105 MiB |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readme := filepath.Join(t.TempDir(), "README.md")
			if err := os.WriteFile(readme, []byte("| h |\n"+historyMarker+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := Run{Started: time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC), Machine: Machine{Cores: 2, MemoryMiB: 24105, Commit: "abc", Probe: tc.probe}}
			if err := AppendHistory(readme, r, "results/x.json"); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(readme)
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("history row %q, want it to hold %q", b, tc.want)
			}
		})
	}
}
