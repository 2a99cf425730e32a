package agent

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is the jittered exponential backoff of the agent's retries, for
// franz-go and for its own loops. The jitter spreads a reconnect storm of
// many agents after a broker outage (docs/design.md §6, storm control).
// Its ceiling is also how long commands may wait once the broker is back:
// franz-go sleeps it between its tries to rejoin the command group, and
// nothing cuts that sleep short. At 30 s, a crash-loop run with two broker
// kills left both agents' groups behind for over 20 s
// (TestCommandsResumeWhenTheBrokerReturns).
func backoff(attempt int) time.Duration {
	const (
		base = 250 * time.Millisecond
		max  = 5 * time.Second
	)
	d := max
	if attempt < 8 {
		d = min(base<<attempt, max)
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx ends, reporting whether it waited fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
