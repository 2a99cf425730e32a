// Package memory holds the process-wide settings of the Go collector: its
// percentage and the soft memory limit, which every processor and projector
// process sets once at start from its flags. They are the process's, not a
// processor's: this package owns nothing else and keeps no state.
package memory

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// GC tunes the Go collector of a process that runs processors. A
// processor's heap is mostly its states, which live as long as the process
// owns their partitions; with the default GOGC=100 a reconnect storm at
// 500,000 VMs collects every time the batches allocate as much as a
// fraction of that, and the collector re-marks the same states each time
// (26 % of the VM processor's CPU in the storm's profile). A higher
// percentage collects less often at the cost of a larger heap; the memory
// limit caps that heap, collecting earlier as it nears the limit.
type GC struct {
	// Percent is debug.SetGCPercent's value; 0 keeps the process's
	// setting (GOGC, else 100); negative turns the collector off below
	// the memory limit.
	Percent int
	// MemoryLimit is debug.SetMemoryLimit's value in bytes; 0 keeps the
	// process's setting (GOMEMLIMIT, else none).
	MemoryLimit int64
}

// RecommendedGCPercent is the GC percentage of processor and projector
// processes (the `vmplane processor` and `vmplane projector` default, the
// bench child's and the journal scenario's): measured in the reconnect
// storm (benchmarks/README.md).
const RecommendedGCPercent = 400

// Apply sets the collector's percentage and memory limit.
func (g GC) Apply() {
	if g.Percent != 0 {
		debug.SetGCPercent(g.Percent)
	}
	if g.MemoryLimit > 0 {
		debug.SetMemoryLimit(g.MemoryLimit)
	}
}

// ParseBytes reads a memory size: a number of bytes with an optional
// suffix B, KiB, MiB, GiB or TiB (as GOMEMLIMIT); "" and "0" are 0.
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("memory size %q: want bytes with an optional B, KiB, MiB, GiB or TiB suffix", s)
	}
	return n << shift, nil
}
