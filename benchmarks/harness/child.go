package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Child is the bench binary re-executed as a child process, so that a
// role runs in a process of its own (its CPU time from /proc, a SIGKILL
// that is a real crash). Its stderr is the harness's; it says it is ready
// with a line of its stdout that starts with "ready".
type Child struct {
	Cmd   *exec.Cmd
	ready chan string
	done  chan struct{} // closed once it has exited and its stdout is read
}

// StartChild starts the bench binary with args, and env added to the
// harness's environment.
func StartChild(args []string, env ...string) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child %s: %w", strings.Join(args, " "), err)
	}
	c := &Child{Cmd: cmd, ready: make(chan string, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "ready") {
				select {
				case c.ready <- line:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// WaitReady waits at most limit for the child's ready line and returns
// it; a child that exits first, or a limit or ctx that ends first, is an
// error, and the child is stopped.
func (c *Child) WaitReady(ctx context.Context, limit time.Duration) (string, error) {
	var err error
	select {
	case line := <-c.ready:
		return line, nil
	case <-c.done:
		err = errors.New("child exited before it was ready")
	case <-time.After(limit):
		err = fmt.Errorf("child not ready in %s", limit)
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.Stop()
	return "", err
}

// Stop ends the child (SIGINT, then SIGKILL after 10 s) and waits for it.
func (c *Child) Stop() {
	_ = c.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.Kill()
	}
}

// Kill ends the child with SIGKILL, as a crash would, and waits for it;
// none (nil) is left as it is.
func (c *Child) Kill() {
	if c == nil {
		return
	}
	_ = c.Cmd.Process.Kill()
	<-c.done
}
