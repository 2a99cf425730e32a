package crashloop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// role is one vmplane process of the stack, started again whenever it
// exits, as systemd's Restart=always does in production
// (ops/deploy/systemd): after a kill of ours with the delay the kill chose,
// after an exit of its own after selfRestartDelay.
type role struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	// probe answers nil when the role is ready (its /readyz, or for the
	// broker a listing of the topics).
	probe func(ctx context.Context) error
	// group is the role's consumer group, "" for none. A process of a
	// group is ready only when the group is Stable with every partition
	// assigned and no member of a killed process left in it: until then
	// some partitions are not consumed, whatever /readyz says.
	group   string
	members func(ctx context.Context, group string) ([]member, error)
	// clock is the stack's time origin, for the records below.
	clock func() time.Duration

	mu        sync.Mutex
	pid       int
	running   bool
	gen       int // starts so far
	stopping  bool
	pending   *kill // the kill whose restart comes next
	restartIn time.Duration
	dead      map[string]int // group member id → pid of the killed process
	exits     []selfExit
	stopc     chan struct{}
	done      chan struct{}
}

// selfExit is an exit the harness did not cause.
type selfExit struct {
	at     time.Duration
	pid    int
	status string
	tail   string // the last lines the process logged
}

const selfRestartDelay = time.Second

// run starts the role's supervisor; the first process is running when it
// returns (or the start failed).
func (r *role) run() error {
	r.stopc, r.done = make(chan struct{}), make(chan struct{})
	cmd, err := r.start()
	if err != nil {
		close(r.done)
		return err
	}
	go r.supervise(cmd)
	return nil
}

func (r *role) start() (*exec.Cmd, error) {
	f, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(r.bin, r.args...)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, so that a ^C in the terminal reaches only the
	// test; killed with the test process if that dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return nil, fmt.Errorf("%s is stopping", r.name)
	}
	r.gen++
	fmt.Fprintf(f, "=== crashloop: start #%d of %s at %s\n", r.gen, r.name, r.clock().Round(time.Millisecond))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", r.name, err)
	}
	r.pid, r.running = cmd.Process.Pid, true
	return cmd, nil
}

func (r *role) supervise(cmd *exec.Cmd) {
	defer close(r.done)
	for {
		werr := cmd.Wait()
		r.mu.Lock()
		r.running = false
		k, delay, stopping := r.pending, r.restartIn, r.stopping
		r.pending = nil
		pid := r.pid
		if k == nil && !stopping {
			r.exits = append(r.exits, selfExit{at: r.clock(), pid: pid, status: exitStatus(werr), tail: tail(r.logPath, 8)})
			delay = selfRestartDelay
		}
		r.mu.Unlock()
		if stopping {
			return
		}
		select {
		case <-r.stopc:
			return
		case <-time.After(delay):
		}
		for {
			var err error
			cmd, err = r.start()
			if err == nil {
				break
			}
			select {
			case <-r.stopc:
				return
			case <-time.After(selfRestartDelay):
			}
		}
		if k != nil {
			r.mu.Lock()
			gen, newPid := r.gen, r.pid
			r.mu.Unlock()
			k.restarted(r.clock(), newPid)
			go r.measure(k, gen)
		}
	}
}

// measure waits until the process of generation gen answers ready and
// records how long that took after its start; a process killed or a role
// stopped before it is ready leaves the recovery unmeasured.
func (r *role) measure(k *kill, gen int) {
	const limit = 3 * time.Minute
	began := time.Now()
	for time.Since(began) < limit {
		r.mu.Lock()
		same, stopping := r.gen == gen && r.running, r.stopping
		r.mu.Unlock()
		if !same || stopping {
			k.unmeasured("killed or stopped before ready")
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := r.ready(ctx)
		cancel()
		if err == nil {
			k.recovered(time.Since(began))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	k.unmeasured(fmt.Sprintf("not ready %s after its restart", limit))
}

// ready probes the role: its probe, then its group.
func (r *role) ready(ctx context.Context) error {
	if err := r.probe(ctx); err != nil {
		return err
	}
	if r.group == "" {
		return nil
	}
	members, err := r.members(ctx, r.group)
	r.mu.Lock()
	var dead []string
	for _, m := range members {
		if pid, ok := r.dead[m.id]; ok {
			dead = append(dead, fmt.Sprintf("…%s of killed pid %d with %d partitions", tailOf(m.id, 8), pid, m.assigned))
		}
	}
	r.mu.Unlock()
	switch {
	case err != nil && len(dead) > 0:
		return fmt.Errorf("%w; members of killed processes: %s", err, strings.Join(dead, "; "))
	case err != nil:
		return err
	case len(dead) > 0:
		return fmt.Errorf("group %s is Stable with %d members, %d of killed processes: %s", r.group, len(members), len(dead), strings.Join(dead, "; "))
	}
	return nil
}

func tailOf(s string, n int) string { return s[max(0, len(s)-n):] }

// kill sends SIGKILL to the running process and has it started again after
// delay; it reports the pid killed, or false when none runs.
func (r *role) kill(k *kill, delay time.Duration) (int, bool) {
	// The process's group members, so that its recovery is judged by a
	// group without them (a member of a killed process stays until its
	// session times out).
	var members []member
	if r.group != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		members, _ = r.members(ctx, r.group)
		cancel()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running || r.stopping || r.pending != nil {
		return 0, false
	}
	if r.dead == nil {
		r.dead = map[string]int{}
	}
	for _, m := range members {
		r.dead[m.id] = r.pid
	}
	if err := syscall.Kill(r.pid, syscall.SIGKILL); err != nil {
		return 0, false
	}
	r.pending, r.restartIn = k, delay
	return r.pid, true
}

// signal sends sig to the running process (SIGSTOP and SIGCONT).
func (r *role) signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return fmt.Errorf("%s is not running", r.name)
	}
	return syscall.Kill(r.pid, sig)
}

// isRunning reports whether a process of the role runs now.
func (r *role) isRunning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// stop kills the running process and ends the supervisor.
func (r *role) stop() {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		<-r.done
		return
	}
	r.stopping = true
	if r.running {
		_ = syscall.Kill(r.pid, syscall.SIGCONT)
		_ = syscall.Kill(r.pid, syscall.SIGKILL)
	}
	close(r.stopc)
	r.mu.Unlock()
	<-r.done
}

func (r *role) selfExits() []selfExit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]selfExit(nil), r.exits...)
}

func exitStatus(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit %d", ee.ExitCode())
	}
	if err != nil {
		return err.Error()
	}
	return "exit 0"
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		_, _ = f.Seek(st.Size()-64<<10, io.SeekStart)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// problems returns the last n lines of the role's log that are warnings
// or errors.
func (r *role) problems(n int) string {
	all := tail(r.logPath, 2000)
	var out []string
	for _, l := range strings.Split(all, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.HasPrefix(l, "vmplane ") || strings.HasPrefix(l, "panic") {
			out = append(out, oneLine(l, 300))
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Join(out, "\n")
}

// httpReady is a probe of a /readyz URL: 200 is ready, anything else says
// why not.
func httpReady(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
		}
		return nil
	}
}
