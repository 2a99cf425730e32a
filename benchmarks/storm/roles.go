package storm

import (
	"context"
	"log/slog"
	"sync"

	"github.com/vmplane/vmplane/ops/roles"
)

// roleRunner returns the function that runs a role on wg until ctx ends,
// logging it if it stops before.
func roleRunner(ctx context.Context, wg *sync.WaitGroup, log *slog.Logger) func(name string, r roles.Runner) {
	return func(name string, r roles.Runner) {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil && ctx.Err() == nil {
				log.Error("bench role stopped", "role", name, "err", err)
			}
		})
	}
}
