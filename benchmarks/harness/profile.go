package harness

import (
	"log/slog"
	"os"
	"runtime/pprof"
	"sync"
)

// CPUProfile starts a CPU profile of this process into path and returns
// what stops it, which logs a profile it could not finish; an empty path
// profiles nothing. Scenarios take the path from VMPLANE_BENCH_CPUPROFILE.
func CPUProfile(path string, log *slog.Logger) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close() // nothing written; the start's error is the one to report
		return nil, err
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Error("cpu profile", "err", err)
		}
	}), nil
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
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Error("heap profile", "err", err)
	}
}
