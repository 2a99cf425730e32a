package harness

import (
	"math"
	"slices"
	"time"
)

// Percentile is the q-th percentile (nearest rank) of d; 0 for none.
func Percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Millis is d in milliseconds, the unit of the latency rows.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
