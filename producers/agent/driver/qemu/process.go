package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// process is one running QEMU. Guests are daemons (launch.go), so the
// driver is not their parent and cannot wait for them: it knows one by its
// pid and pid file, keeps a monitor connection to it while it lives, and
// learns of its exit when that connection closes and the pid no longer
// names the pid file. A process found at start-up (adopt.go) is watched the
// same way as one the driver started.
type process struct {
	host    string
	pid     int
	pidfile string
	socket  string // our monitor, <vm dir>/<host>.qmp
	// handle signals through a pidfd: a kill never reaches a process
	// that was given the pid after this one died.
	handle *os.Process
	// exited is closed once the process is gone; connected once the first
	// monitor connection is up (its run state known).
	exited, connected chan struct{}
	// unknownSeen is set when a wait for the first connection gave up:
	// someone may have reported the state unknown, so its arrival is a
	// change.
	unknownSeen atomic.Bool
	// released ends the watch while the process runs on (a second copy of
	// a VM that the driver leaves alone, see reconcile).
	released     chan struct{}
	releasedOnce sync.Once

	mu     sync.Mutex
	qmp    *Client // nil while not connected
	status string  // the last run state QEMU reported (running, paused, …)
	// refreshing serializes refresh: the driver's calls (after stop,
	// cont, …) and the watcher's (after a STOP or RESUME event, which may
	// arrive after a later command's answer) each ask and set in turn, so
	// an earlier answer never overwrites a later one.
	refreshing sync.Mutex
}

// errNoMonitor: the process runs but its monitor is not connected, e.g.
// while another agent still holds it.
var errNoMonitor = errors.New("qemu monitor not connected")

// attach starts watching the guest pid of VM id on host; nil when pid is
// not that guest (any more).
func (d *Driver) attach(id, dir, host string, pid int) *process {
	// With pidfds FindProcess pins the process: checked after, the pid
	// cannot have passed to another process between check and signal.
	h, err := os.FindProcess(pid)
	if err != nil || !isGuest(pid, pidPath(dir, host)) {
		return nil
	}
	p := &process{host: host, pid: pid, pidfile: pidPath(dir, host), socket: filepath.Join(dir, host+".qmp"), handle: h,
		exited: make(chan struct{}), connected: make(chan struct{}), released: make(chan struct{})}
	go d.watch(id, p)
	return p
}

// watch keeps a monitor connection to p while it lives and turns QMP
// events and the process's exit into Changes.
func (d *Driver) watch(id string, p *process) {
	first := true
	for {
		c, gone := d.connect(p)
		if c == nil {
			if gone {
				_ = p.handle.Release() // frees the pidfd; the process is gone
				close(p.exited)
				d.signal(p.host, id)
			}
			return
		}
		p.setMonitor(c)
		p.refreshAfterEvent("")
		// Signalled when the state may have been reported unknown before,
		// or changed while nobody listened.
		if !first || p.unknownSeen.Load() {
			d.signal(p.host, id)
		}
		if first {
			close(p.connected)
			first = false
		}
		d.follow(id, p, c)
		p.setMonitor(nil)
	}
}

// connect dials p's monitor until it answers; gone is set when the process
// ended first. A monitor connection closes when QEMU exits, and QEMU takes
// a few milliseconds more to be gone, so the first waits are short.
func (d *Driver) connect(p *process) (c *Client, gone bool) {
	wait := 2 * time.Millisecond
	for {
		if !isGuest(p.pid, p.pidfile) {
			return nil, true
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := dialOnce(ctx, p.socket)
		cancel()
		if err == nil {
			return c, false
		}
		select {
		case <-d.done:
			return nil, false
		case <-p.released:
			return nil, false
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// follow handles c's events until it closes.
func (d *Driver) follow(id string, p *process, c *Client) {
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				return
			}
			switch ev.Name {
			case "STOP":
				p.refreshAfterEvent("paused")
			case "RESUME":
				p.refreshAfterEvent("running")
			case "SHUTDOWN":
				// The guest powered off (or QEMU is told to quit): QEMU
				// exits next, and the VM is off from now on, which the
				// change reports at once rather than after the exit.
				p.setStatus("shutdown")
			case "POWERDOWN", "RESET":
			default:
				continue
			}
			d.signal(p.host, id)
		case <-d.done:
			drop(c)
			return
		case <-p.released:
			drop(c)
			return
		}
	}
}

// drop closes c and waits until its reader has let go of it.
func drop(c *Client) {
	_ = c.Close()
	for range c.Events() {
	}
}

// release stops watching p and drops its monitor; the process runs on.
func (p *process) release() {
	p.releasedOnce.Do(func() { close(p.released) })
}

func (p *process) setMonitor(c *Client) {
	p.mu.Lock()
	p.qmp = c
	p.mu.Unlock()
}

func (p *process) monitor() *Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.qmp
}

// execute runs a QMP command on p's monitor.
func (p *process) execute(ctx context.Context, cmd string, args any) (json.RawMessage, error) {
	c := p.monitor()
	if c == nil {
		return nil, fmt.Errorf("%s: %w", cmd, errNoMonitor)
	}
	return c.Execute(ctx, cmd, args)
}

func (p *process) setStatus(s string) {
	p.mu.Lock()
	p.status = s
	p.mu.Unlock()
}

func (p *process) getStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// holdsGuest reports whether p may be running the VM: not what is left of
// a migration or of a guest that powered off. A process whose state is not
// known yet counts as holding it: never start a second copy on a guess.
func (p *process) holdsGuest() bool {
	switch p.getStatus() {
	case "shutdown", "guest-panicked", "postmigrate", "inmigrate":
		return false
	}
	return true
}

// waitConnected waits until p's monitor is connected.
func (p *process) waitConnected(ctx context.Context) error {
	select {
	case <-p.connected:
		return nil
	case <-p.exited:
		return errors.New("qemu exited")
	case <-ctx.Done():
		p.unknownSeen.Store(true)
		return fmt.Errorf("%w: %w", errNoMonitor, ctx.Err())
	}
}

// kill ends p at once (SIGKILL); an error means it is gone already.
func (p *process) kill() { _ = p.handle.Kill() }

// refreshAfterEvent re-reads the run state after a STOP or RESUME event
// rather than taking the event's word: the event may be older than the
// answer of a command sent since (a pause's STOP handled after the unpause).
func (p *process) refreshAfterEvent(implied string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.refresh(ctx, implied)
}

// refresh asks QEMU for its run state and records it; when QEMU does not
// answer (it is exiting), it records fallback.
func (p *process) refresh(ctx context.Context, fallback string) {
	p.refreshing.Lock()
	defer p.refreshing.Unlock()
	status, err := p.queryStatus(ctx)
	if err != nil {
		status = fallback
	}
	p.setStatus(status)
}

// queryStatus asks QEMU for its run state (running, paused, inmigrate, …).
func (p *process) queryStatus(ctx context.Context) (string, error) {
	ret, err := p.execute(ctx, "query-status", nil)
	if err != nil {
		return "", err
	}
	var st struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(ret, &st); err != nil {
		return "", fmt.Errorf("query-status answer: %w", err)
	}
	return st.Status, nil
}

// quit ends a process: QMP quit (SIGTERM when the monitor is not ours,
// which QEMU takes as the same), then SIGKILL if it lingers.
func (d *Driver) quit(ctx context.Context, p *process) error {
	if _, err := p.execute(ctx, "quit", nil); err != nil {
		// The answer may race the exit, and a signal to a process that
		// is gone does nothing.
		_ = p.handle.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	p.kill()
	select {
	case <-p.exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("qemu pid %d still runs after SIGKILL", p.pid)
	}
}

// quitLeftover quits p where no caller waits for the outcome: the
// operation is failing already, or p holds nothing the VM needs. A QEMU
// that outlives even SIGKILL is logged for the operator.
func (d *Driver) quitLeftover(ctx context.Context, p *process) {
	if err := d.quit(ctx, p); err != nil {
		d.cfg.Logger.Warn("qemu: process left running", "host", p.host, "pid", p.pid, "pidfile", p.pidfile, "err", err)
	}
}
