package telemetry

import (
	"fmt"
	"sync"
	"time"
)

// RetryingSeconds is how long each consumer has been retrying the same
// work without success (0 when it is not retrying).
var RetryingSeconds = Default.Gauge("vmplane_retrying_seconds",
	"How long a consumer has been retrying the same work (a store or broker refusing it); 0 when it is not.", "consumer")

// RetryAlarm is how long the same work may be retried before a consumer's
// health reports it.
const RetryAlarm = 30 * time.Second

// Retrying tracks the retries of one consumer, so that a retry that lasts
// is seen on /readyz and in metrics instead of only in the log. The zero
// value is ready to use; a nil *Retrying records nothing.
type Retrying struct {
	Consumer string

	mu    sync.Mutex
	since time.Time
	what  string
	err   error
}

// Failed records a failed attempt of what.
func (r *Retrying) Failed(what string, err error, now time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since.IsZero() {
		r.since = now
	}
	r.what, r.err = what, err
	RetryingSeconds.With(r.Consumer).Set(now.Sub(r.since).Seconds())
}

// Succeeded ends the retries.
func (r *Retrying) Succeeded() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.since.IsZero() {
		r.since, r.what, r.err = time.Time{}, "", nil
		RetryingSeconds.With(r.Consumer).Set(0)
	}
}

// Err says what has been retried for longer than after, with the last
// error; nil when nothing has.
func (r *Retrying) Err(now time.Time, after time.Duration) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since.IsZero() || now.Sub(r.since) < after {
		return nil
	}
	return fmt.Errorf("%s: retrying for %s: %w", r.what, now.Sub(r.since).Round(time.Second), r.err)
}
