package main

import (
	"testing"
	"time"
)

func TestInstant(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "2026-05-01T09:03:00Z", want: time.Date(2026, 5, 1, 9, 3, 0, 0, time.UTC)},
		{in: "2026-05-01T11:03:00.250+02:00", want: time.Date(2026, 5, 1, 9, 3, 0, 250e6, time.UTC)},
		{in: "10m", want: now.Add(-10 * time.Minute)},
		{in: "-10m", err: true},
		{in: "yesterday", err: true},
	}
	for _, tt := range tests {
		got, err := instant(tt.in, now)
		if (err != nil) != tt.err || err == nil && !got.Equal(tt.want) {
			t.Errorf("instant(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}
