package durability

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// stalls is the kernel's pressure stall information (/proc/pressure,
// "some" line): how long at least one task waited for a CPU, and for I/O.
// A synced write wakes the kernel's journal thread and waits for it, so
// on a busy box the synced figures move with both, while the in-memory
// ones hardly do; the notes carry them so that a run says what it shared
// the machine with.
type stalls struct {
	cpu, io time.Duration
	ok      bool
}

func readStalls() stalls {
	cpu, okc := someTotal("/proc/pressure/cpu")
	io, oki := someTotal("/proc/pressure/io")
	return stalls{cpu: cpu, io: io, ok: okc && oki}
}

// someTotal reads the total of the "some" line of a pressure file.
func someTotal(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				return time.Duration(us) * time.Microsecond, err == nil
			}
		}
	}
	return 0, false
}

// stalled is the share of wall clock between two readings during which a
// task waited for a CPU, and for I/O (0 and false without /proc/pressure).
type stalled struct {
	cpu, io float64
	ok      bool
}

func since(before stalls, wall time.Duration) stalled {
	after := readStalls()
	if !before.ok || !after.ok || wall <= 0 {
		return stalled{}
	}
	return stalled{cpu: float64(after.cpu-before.cpu) / float64(wall), io: float64(after.io-before.io) / float64(wall), ok: true}
}
