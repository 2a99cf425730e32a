package journal

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := backoff{first: 100 * time.Millisecond, max: time.Second}
	for _, tt := range []struct {
		attempt int
		want    time.Duration
	}{{0, 100 * time.Millisecond}, {1, 200 * time.Millisecond}, {3, 800 * time.Millisecond}, {4, time.Second}, {60, time.Second}} {
		if got := b.delay(tt.attempt); got != tt.want {
			t.Errorf("delay(%d) = %v, want %v", tt.attempt, got, tt.want)
		}
	}
}

func TestRetryUntilSuccess(t *testing.T) {
	calls := 0
	err := retry(t.Context(), slog.New(slog.DiscardHandler), nil, "insert", backoff{time.Millisecond, 4 * time.Millisecond}, time.Second,
		func(ctx context.Context) error {
			calls++
			if _, ok := ctx.Deadline(); !ok {
				t.Error("attempt without a deadline")
			}
			if calls < 5 {
				return errors.New("connection refused")
			}
			return nil
		})
	if err != nil || calls != 5 {
		t.Fatalf("err %v after %d calls, want nil after 5", err, calls)
	}
}

func TestRetryStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := retry(ctx, slog.New(slog.DiscardHandler), nil, "insert", backoff{time.Hour, time.Hour}, time.Second,
		func(context.Context) error {
			calls++
			cancel() // the wait after this failure must end with ctx, not after an hour
			return errors.New("down")
		})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("err %v after %d calls, want context.Canceled after 1", err, calls)
	}
}
