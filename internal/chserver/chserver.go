// Package chserver finds or starts a ClickHouse server for development and tests: it returns the
// server answering at an address when there is one, and otherwise starts the installed
// clickhouse-server with a config of its own and all its files under a var directory.
//
// The config it writes runs on Debian's ClickHouse 18.16 and on current releases. Besides the
// `default` user, each database it creates gets an analyst user (AnalystUser) for queries users
// may type: read-only, bounded by a profile, allowed that database only. It never creates
// tables: the journal projector owns those.
package chserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/vmplane/vmplane/internal/filelock"
)

// DefaultAddr is where ClickHouse's native protocol listens unless configured otherwise.
const DefaultAddr = "127.0.0.1:9000"

const (
	pingTimeout  = 2 * time.Second
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// Server is a ClickHouse server that answers the native protocol at Addr.
type Server struct {
	addr string
	stop func()
}

// Addr is the host:port of the native protocol.
func (s Server) Addr() string { return s.addr }

// Started reports whether Ensure started the server rather than finding it running.
func (s Server) Started() bool { return s.stop != nil }

// Stop stops the server if Ensure started it; a server that was already running is left alone.
func (s Server) Stop() {
	if s.stop != nil {
		s.stop()
	}
}

// Option adjusts how Ensure starts a server.
type Option func(*options)

type options struct {
	httpPort int
	detached bool
	access   Access
}

// HTTPPort sets the HTTP interface's port. By default it is 8123 when free and any free port
// otherwise, so that two servers never clash.
func HTTPPort(port int) Option { return func(o *options) { o.httpPort = port } }

// Login is how Ensure logs in to a server it finds answering at addr (a
// production-like one with users and passwords). A server Ensure starts
// has the passwordless default user on loopback, whatever a says.
func Login(a Access) Option { return func(o *options) { o.access = a } }

// Detached makes a started server outlive this process, in its own session, so that other
// processes can share it; StopDir stops it. Without it the server gets SIGTERM when this
// process dies.
func Detached() Option { return func(o *options) { o.detached = true } }

// Ensure returns the ClickHouse answering at addr (default DefaultAddr). When none answers and
// addr is a loopback address, it starts clickhouse-server with its config, data and logs under
// varDir/clickhouse, waits until it answers and returns it.
func Ensure(ctx context.Context, addr, varDir string, log *slog.Logger, opts ...Option) (Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if addr == "" {
		addr = DefaultAddr
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return Server{}, fmt.Errorf("clickhouse addr %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return Server{}, fmt.Errorf("clickhouse addr %q: bad port", addr)
	}
	if ping(ctx, addr, o.access) == nil {
		return Server{addr: addr}, nil
	}
	if !isLoopback(host) {
		return Server{}, fmt.Errorf("no clickhouse answers at %s and it is not local, so none is started", addr)
	}

	dir, err := filepath.Abs(filepath.Join(varDir, "clickhouse"))
	if err != nil {
		return Server{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Server{}, fmt.Errorf("create %s: %w", dir, err)
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(varDir, "clickhouse.lock"))
	if err != nil {
		return Server{}, err
	}
	defer unlock()
	// Another process may have started it while we waited for the lock.
	if ping(ctx, addr, Access{}) == nil {
		return Server{addr: addr}, nil
	}
	answers, err := makeRoom(ctx, dir, addr, log)
	if err != nil {
		return Server{}, err
	}
	if answers {
		return Server{addr: addr}, nil
	}
	return startServer(ctx, layout{Dir: dir, ListenHost: listenHost(host), TCPPort: port, HTTPPort: o.httpPort}, addr, o.detached, log)
}

// makeRoom deals with what is at addr when nothing answers there, with the
// lock held: one of ours may still be starting, or just slow on a busy
// machine, and is given a while (answers is set when it does) before it is
// taken for wedged and stopped; anything else that holds the port is an
// error.
func makeRoom(ctx context.Context, dir, addr string, log *slog.Logger) (answers bool, err error) {
	if pid := readPID(dir); pid > 0 && isClickHouse(pid) {
		for range 20 {
			if ping(ctx, addr, Access{}) == nil {
				return true, nil
			}
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			time.Sleep(500 * time.Millisecond)
		}
		log.Warn("stopping a clickhouse of ours that does not answer", "pid", pid, "addr", addr)
	}
	if err := stopPIDFile(ctx, dir); err != nil {
		return false, err
	}
	if err := ping(ctx, addr, Access{}); portOpen(addr) {
		return false, fmt.Errorf("%s is taken by something that does not answer as clickhouse: %v", addr, err)
	}
	return false, nil
}

// startServer writes cfg (an HTTP port of 0 picks one), starts
// clickhouse-server with it and waits until it answers at addr.
func startServer(ctx context.Context, cfg layout, addr string, detached bool, log *slog.Logger) (Server, error) {
	bin, args, err := findBinary()
	if err != nil {
		return Server{}, err
	}
	if cfg.HTTPPort == 0 {
		cfg.HTTPPort = freePort(cfg.ListenHost, 8123)
	}
	if err := cfg.write(); err != nil {
		return Server{}, err
	}
	c, err := spawn(bin, args, cfg, detached)
	if err != nil {
		return Server{}, err
	}
	if err := c.await(ctx, addr, cfg); err != nil {
		return Server{}, err
	}
	log.Info("started clickhouse", "addr", addr, "http_port", cfg.HTTPPort, "dir", cfg.Dir, "pid", c.cmd.Process.Pid)
	return Server{addr: addr, stop: c.stop}, nil
}

// child is a clickhouse-server this process started.
type child struct {
	cmd     *exec.Cmd
	pidFile string
	exited  chan struct{} // closed once it has exited
}

// spawn starts clickhouse-server with cfg, its output appended to
// stdout.log in cfg's log directory, and writes its pid file.
func spawn(bin string, args []string, cfg layout, detached bool) (*child, error) {
	logOut, err := os.OpenFile(filepath.Join(cfg.logDir(), "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The server writes through its own copy of the descriptor; ours
	// writes nothing.
	defer func() { _ = logOut.Close() }()
	cmd := exec.Command(bin, append(args, "--config-file="+cfg.configPath())...)
	cmd.Dir = cfg.Dir
	cmd.Stdout, cmd.Stderr = logOut, logOut
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	pidFile := filepath.Join(cfg.Dir, "server.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	c := &child{cmd: cmd, pidFile: pidFile, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c, nil
}

// await waits until the server answers at addr; when it exits first it
// says why, and when it does not answer in startTimeout or ctx ends it is
// stopped.
func (c *child) await(ctx context.Context, addr string, cfg layout) error {
	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(ctx, addr, Access{})
		if err == nil {
			return nil
		}
		select {
		case <-c.exited:
			removeIfPID(c.pidFile, c.cmd.Process.Pid)
			return fmt.Errorf("clickhouse-server exited during start (%s): %w\n%s", c.cmd.ProcessState, err, cfg.logTail())
		case <-ctx.Done():
			c.stop()
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return fmt.Errorf("clickhouse-server does not answer at %s after %v: %w\n%s", addr, startTimeout, err, cfg.logTail())
		}
	}
}

// stop ends the server: SIGTERM, then SIGKILL when it lingers past
// stopTimeout.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(stopTimeout):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	removeIfPID(c.pidFile, c.cmd.Process.Pid)
}

// StopDir stops a server that Ensure started under varDir, in this or any other process, and
// waits for it to exit. It is a no-op when none is running there.
func StopDir(ctx context.Context, varDir string) error {
	unlock, err := filelock.Lock(ctx, filepath.Join(varDir, "clickhouse.lock"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer unlock()
	return stopPIDFile(ctx, filepath.Join(varDir, "clickhouse"))
}

// EnsureDatabase creates database name on the server at addr unless it exists, and on a server
// this package started its analyst user with DefaultAnalystLimits (EnsureAnalyst).
func EnsureDatabase(ctx context.Context, addr, name string) error {
	return Access{}.EnsureDatabase(ctx, addr, name)
}

// EnsureDatabase is EnsureDatabase as a's user.
func (a Access) EnsureDatabase(ctx context.Context, addr, name string) error {
	conn, err := a.Open(addr, "")
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+QuoteIdent(name)); err != nil {
		return fmt.Errorf("create clickhouse database %s: %w", name, err)
	}
	return a.EnsureAnalyst(ctx, addr, name, DefaultAnalystLimits())
}

// QuoteIdent quotes an identifier the way every ClickHouse version reads it.
func QuoteIdent(name string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(name) + "`"
}

func ping(ctx context.Context, addr string, a Access) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	o, err := a.Options(addr, "")
	if err != nil {
		return err
	}
	o.DialTimeout, o.ReadTimeout = pingTimeout, pingTimeout
	conn, err := clickhouse.Open(o)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Ping(ctx)
}

func portOpen(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, pingTimeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listenHost(host string) string {
	if host == "localhost" {
		return "127.0.0.1"
	}
	return host
}

// freePort returns preferred when it can be bound on host, else a port the kernel picks.
func freePort(host string, preferred int) int {
	host = listenHost(host)
	if l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(preferred))); err == nil {
		l.Close()
		return preferred
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return preferred
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// findBinary returns the server binary and the arguments that select the server in it. Debian's
// 18.16 ships /usr/sbin/clickhouse-server, current releases one `clickhouse` multi-tool with a
// clickhouse-server link.
func findBinary() (string, []string, error) {
	for _, name := range []string{"clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil, nil
		}
	}
	for _, name := range []string{"clickhouse", "/usr/bin/clickhouse"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, []string{"server"}, nil
		}
	}
	return "", nil, errors.New("no clickhouse-server binary found (install clickhouse-server, e.g. with ops/install.sh)")
}

// stopPIDFile stops the server recorded in dir/server.pid, if it still runs.
func stopPIDFile(ctx context.Context, dir string) error {
	pidFile := filepath.Join(dir, "server.pid")
	if _, err := os.Stat(pidFile); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	pid := readPID(dir)
	if pid <= 0 || !isClickHouse(pid) {
		// Gone, or the pid was reused by an unrelated process.
		return os.Remove(pidFile)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(stopTimeout)
	for isClickHouse(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(stopTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop clickhouse pid %d: %w", pid, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	removeIfPID(pidFile, pid)
	return nil
}

// readPID returns the pid recorded in dir/server.pid, or 0.
func readPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "server.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// isClickHouse reports whether pid is a live (not zombie) clickhouse process.
func isClickHouse(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name, which may itself contain ") ".
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(cmdline, []byte("clickhouse"))
}

func removeIfPID(pidFile string, pid int) {
	if b, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(pid) {
		_ = os.Remove(pidFile)
	}
}

// DropDatabase drops database name if it exists.
func DropDatabase(ctx context.Context, addr, name string) error {
	return Access{}.DropDatabase(ctx, addr, name)
}

// DropDatabase is DropDatabase as a's user.
func (a Access) DropDatabase(ctx context.Context, addr, name string) error {
	conn, err := a.Open(addr, "")
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+QuoteIdent(name)); err != nil {
		return fmt.Errorf("drop clickhouse database %s: %w", name, err)
	}
	return nil
}
