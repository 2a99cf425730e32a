package journal

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/vmplane/vmplane/internal/telemetry"
)

// backoff is an exponential delay between attempts: first, doubled after
// every failure, never more than max.
type backoff struct {
	first, max time.Duration
}

func (b backoff) delay(attempt int) time.Duration {
	d := b.first
	for range attempt {
		d *= 2
		if d >= b.max {
			return b.max
		}
	}
	return d
}

// retry calls fn until it succeeds or ctx ends, waiting b between attempts.
// It gives up on nothing but ctx: the projector must neither drop rows nor
// move past them, so an unreachable ClickHouse or broker stalls it instead.
// Each attempt gets its own deadline so one hung connection cannot stall it
// for good.
// Retries that last are recorded in r (nil records nothing) for Health.
func retry(ctx context.Context, log *slog.Logger, r *telemetry.Retrying, what string, b backoff, attempt time.Duration, fn func(context.Context) error) error {
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := fn(actx)
		cancel()
		if err == nil {
			r.Succeeded()
			if n > 0 {
				log.Info(what+" succeeded after retries", "attempts", n+1)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errProjectionGone) {
			return err // no wait mends it: the run must rebuild
		}
		r.Failed(what, err, time.Now())
		d := b.delay(n)
		log.Warn(what+" failed, retrying", "attempt", n+1, "in", d, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}
