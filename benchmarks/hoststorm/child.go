package hoststorm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

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

// child is a running child process.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startChild starts a child and waits for its ready line; it returns how
// long that took from the exec.
func startChild(ctx context.Context, a ChildArgs) (*child, time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	arg, err := json.Marshal(a)
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(exe, "-hosts-child", string(arg))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start hosts child: %w", err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready" {
				ready <- struct{}{}
			}
		}
		_ = cmd.Wait()
		close(c.done)
	}()
	select {
	case <-ready:
		return c, time.Since(t0), nil
	case <-c.done:
		err = errors.New("hosts child exited before it was ready")
	case <-time.After(5 * time.Minute):
		err = errors.New("hosts child not ready in 5 minutes")
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.kill()
	return nil, 0, err
}

// kill ends the child with SIGKILL, as a crash would, and waits for it;
// a child already ended (or none) is left as it is.
func (c *child) kill() {
	if c == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}
