package harness

import (
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
