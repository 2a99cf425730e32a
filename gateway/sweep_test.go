package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// failingSweeps is an idempotency store whose first sweeps fail, as they
// do for a gateway started before the read model's schema exists.
type failingSweeps struct {
	IdempotencyStore
	mu       sync.Mutex
	failures int
	calls    []time.Time
}

func (f *failingSweeps) Sweep(context.Context, time.Time, time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, time.Now())
	if len(f.calls) <= f.failures {
		return errors.New(`relation "idempotency_keys" does not exist`)
	}
	return nil
}

func (f *failingSweeps) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// TestFailedSweepIsRetriedSoon: a sweep that failed is tried again after
// the retry interval, not the hour of the regular one; once it succeeds,
// the next waits the regular interval.
func TestFailedSweepIsRetriedSoon(t *testing.T) {
	store := &failingSweeps{failures: 2}
	s := &Server{idem: store, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.sweepEach(ctx, time.Hour, 10*time.Millisecond)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for store.count() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := store.count(); n != 3 {
		t.Fatalf("%d sweeps within 5 s, want 2 failed ones and the one after them", n)
	}
	time.Sleep(100 * time.Millisecond)
	if n := store.count(); n != 3 {
		t.Fatalf("%d sweeps after one succeeded, want it to wait the regular interval", n)
	}
	cancel()
	<-done
}
