package storm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// A latency repetition runs in a process of its own: the bench binary
// re-executes itself with -latency-child. The harness process is where the
// storm ran, and what a 500,000-VM storm leaves in a process (a heap grown
// to gigabytes, its freed spans returned to the kernel) slowed the next
// scenario's every allocation and syscall there: on 2026-11-25, the same
// binary, one run each, gave the 500/s p99 193 and 78 ms right after a
// storm in the same process, and 60 ms in a new process started right after
// one (100/s: 44 and 49 against 17 ms). A repetition in a new process
// measures the pipeline, not the previous scenario's leftovers.

// LatencyChildArgs is what the harness passes to a latency child.
type LatencyChildArgs struct {
	Size   LatencySize `json:"size"`
	PGBase string      `json:"pg_base"`
	// Deploys, when set, makes the child run the deploy open loop
	// (RunDeploys) instead of the reboots.
	Deploys *DeploySize `json:"deploys,omitempty"`
}

// RunLatencyChild is the child: it runs one repetition (RunLatency) and
// writes the sample as JSON to stdout. The profiles of
// VMPLANE_BENCH_CPUPROFILE and VMPLANE_BENCH_MEMPROFILE are of this
// process, where every role of the scenario runs.
func RunLatencyChild(ctx context.Context, arg string) error {
	var a LatencyChildArgs
	if err := json.Unmarshal([]byte(arg), &a); err != nil {
		return fmt.Errorf("latency child arguments %q: %w", arg, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stop, err := harness.CPUProfile(os.Getenv("VMPLANE_BENCH_CPUPROFILE"), log)
	if err != nil {
		return err
	}
	var s any
	if a.Deploys != nil {
		s, err = RunDeploys(ctx, *a.Deploys, a.PGBase, log)
	} else {
		s, err = RunLatency(ctx, a.Size, a.PGBase, log)
	}
	stop()
	harness.HeapProfile(os.Getenv("VMPLANE_BENCH_MEMPROFILE"), log)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(s)
}

// RunLatencyIsolated runs one repetition in a new child process and returns
// its sample; the child's log goes to this process's stderr.
func RunLatencyIsolated(ctx context.Context, ls LatencySize, pgBase string) (LatencySample, error) {
	var s LatencySample
	return s, runChild(ctx, LatencyChildArgs{Size: ls, PGBase: pgBase}, &s)
}

// RunDeploysIsolated runs one repetition of the deploy open loop in a new
// child process and returns its sample.
func RunDeploysIsolated(ctx context.Context, ds DeploySize, pgBase string) (DeploySample, error) {
	var s DeploySample
	return s, runChild(ctx, LatencyChildArgs{Deploys: &ds, PGBase: pgBase}, &s)
}

// runChild runs the bench binary as a child with args and decodes the
// sample it prints into sample.
func runChild(ctx context.Context, args LatencyChildArgs, sample any) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	arg, err := json.Marshal(args)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, "-latency-child", string(arg))
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	// Interrupted, the child stops as the harness does (it drops its
	// database on the way out); it is killed only if it does not.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("latency child: %w", err)
	}
	if err := json.Unmarshal(out.Bytes(), sample); err != nil {
		return fmt.Errorf("latency child's sample: %w", err)
	}
	return nil
}
