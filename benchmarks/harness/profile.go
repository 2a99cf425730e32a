package harness

import (
	"log/slog"
	"os"
	"runtime/pprof"
)

// CPUProfile starts a CPU profile of this process into path and returns
// what stops it; an empty path profiles nothing. Scenarios take the path
// from VMPLANE_BENCH_CPUPROFILE.
func CPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// HeapProfile writes this process's heap profile into path (nothing for
// an empty path); its alloc_space sample counts every allocation since the
// process started.
func HeapProfile(path string, log *slog.Logger) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		log.Error("heap profile", "err", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		log.Error("heap profile", "err", err)
	}
}
