package storm

import (
	"testing"
	"time"
)

// TestPoolCoversAPhase checks that the action pool gives every action of a
// rate's phase a VM of its own.
func TestPoolCoversAPhase(t *testing.T) {
	for _, c := range []struct {
		ls   LatencySize
		want int
	}{
		{LatencyFull, 10000},
		{LatencyQuick, 100},
		{LatencySize{Rates: []int{1000, 300}, Duration: 1500 * time.Millisecond}, 2000},
		{LatencySize{Rates: []int{30}, Duration: 2 * time.Second}, 100},
	} {
		got := c.ls.Pool()
		if got != c.want {
			t.Errorf("%v for %s: pool %d, want %d", c.ls.Rates, c.ls.Duration, got, c.want)
		}
		for _, rate := range c.ls.Rates {
			if actions := int(float64(rate) * c.ls.Duration.Seconds()); actions > got {
				t.Errorf("%v for %s: %d actions at %d/s over a pool of %d", c.ls.Rates, c.ls.Duration, actions, rate, got)
			}
		}
	}
}
