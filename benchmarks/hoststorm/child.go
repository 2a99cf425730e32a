package hoststorm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/engine"
)

// ChildArgs is what the harness passes to a child with -hosts-child, as
// JSON.
type ChildArgs struct {
	Brokers      []string      `json:"brokers"`
	PingInterval time.Duration `json:"ping_interval"`
}

// RunChild runs every processor kind of ops/roles, wired as `vmplane
// processor` wires them, with the ChildArgs of arg, until ctx ends. It
// prints the line "ready" once each of them has its partitions restored and
// consumes.
func RunChild(ctx context.Context, arg string) error {
	var a ChildArgs
	if err := json.Unmarshal([]byte(arg), &a); err != nil {
		return fmt.Errorf("hosts child arguments %q: %w", arg, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := roles.Options{Kafka: kafka.Config{Brokers: a.Brokers}, InstanceID: "bench", Logger: log}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var procs []roles.Processor
	errc := make(chan error, len(roles.ProcessorKinds))
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, kind := range roles.ProcessorKinds {
		p, err := roles.NewProcessor(kind, o, roles.Settings{PingInterval: a.PingInterval}, engine.SystemClock{})
		if err != nil {
			return err
		}
		procs = append(procs, p)
		wg.Go(func() {
			if err := p.Run(ctx); err != nil {
				errc <- fmt.Errorf("processor %s: %w", kind, err)
			}
		})
	}
	for {
		ready := true
		for _, p := range procs {
			ready = ready && p.ReadyErr() == nil
		}
		if ready {
			fmt.Println("ready")
			break
		}
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Millisecond):
		}
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
}

// startChild starts a child and waits for its ready line; it returns how
// long that took from the exec.
func startChild(ctx context.Context, a ChildArgs) (*harness.Child, time.Duration, error) {
	arg, err := json.Marshal(a)
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	c, err := harness.StartChild([]string{"-hosts-child", string(arg)})
	if err != nil {
		return nil, 0, err
	}
	if _, err := c.WaitReady(ctx, 5*time.Minute); err != nil {
		return nil, 0, fmt.Errorf("hosts child: %w", err)
	}
	return c, time.Since(t0), nil
}
