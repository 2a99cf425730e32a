// Package roles wires vmplane's parts into runnable roles — processor,
// projector, gateway, agent, broker — from configuration. Each role is what
// `vmplane <role>` runs as its own process in production and what
// `vmplane dev` runs all together in one. roles decides nothing: the
// deciding lives in the packages it wires.
package roles

import (
	"context"
	"log/slog"
	"time"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/kafka"
)

// Options are shared by every role.
type Options struct {
	Kafka kafka.Config
	// ClickHouse is how the journal projector logs in to ClickHouse.
	ClickHouse chserver.Access
	InstanceID string
	Logger     *slog.Logger
}

// Runner is a role ready to run until its context ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Supervise runs r and restarts it with backoff when it fails, as systemd
// restarts a production role; it returns when ctx ends.
func Supervise(ctx context.Context, log *slog.Logger, name string, r Runner) {
	backoff := 500 * time.Millisecond
	for {
		start := time.Now()
		err := r.Run(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = 500 * time.Millisecond
		}
		log.Error("role stopped; restarting", "role", name, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}
