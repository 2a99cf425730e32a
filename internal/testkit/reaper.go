package testkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/pgserver"
)

// A server a test process starts must outlive that process, since the test binaries `go test`
// runs side by side share it, yet must not outlive the test run. Under the var directory:
//
//	users.lock    every test process that used a server holds a shared flock on it until it
//	              exits, which the kernel guarantees even on a crash
//	reap/<name>   a server some test process started and nobody has claimed (teststack up
//	              claims them, so servers it started stay until teststack down)
//	reaper.lock   held by the one running reaper
//
// The reaper is the test binary itself, re-executed with reaperEnv set, so no other binary has
// to be built or found. Once it can hold users.lock exclusively for reapGrace, it stops the
// marked servers while still holding it, so no test can start using one meanwhile.
const (
	reaperEnv      = "VMPLANE_TESTKIT_REAPER"
	reapGrace      = 10 * time.Second
	markPostgres   = "postgres"
	markClickHouse = "clickhouse"
)

func init() {
	// Runs before the tests of whatever binary imports testkit, so the re-executed test binary
	// becomes the reaper and never runs a test.
	varDir := os.Getenv(reaperEnv)
	if varDir == "" {
		return
	}
	out, err := os.OpenFile(filepath.Join(varDir, "reaper.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		os.Exit(1)
	}
	reap(varDir, reapGrace, time.Second, slog.New(slog.NewTextHandler(out, nil)))
	os.Exit(0)
}

var users struct {
	sync.Mutex
	f *os.File
}

// joinUsers takes this process's shared lock on users.lock, kept until the process exits.
func joinUsers(varDir string) error {
	users.Lock()
	defer users.Unlock()
	if users.f != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(varDir, "users.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return errorf("%w", err)
	}
	// Blocks only while a reaper is stopping servers.
	if err := flock(f, syscall.LOCK_SH); err != nil {
		_ = f.Close() // a lock file: nothing written
		return errorf("lock %s: %w", f.Name(), err)
	}
	users.f = f
	return nil
}

var spawn sync.Once

// leaveToReaper marks a server this process started and makes sure a reaper watches it.
func leaveToReaper(varDir, name string) error {
	if err := os.MkdirAll(filepath.Join(varDir, "reap"), 0o755); err != nil {
		return errorf("%w", err)
	}
	if err := os.WriteFile(filepath.Join(varDir, "reap", name), nil, 0o644); err != nil {
		return errorf("%w", err)
	}
	var err error
	spawn.Do(func() {
		var exe string
		if exe, err = os.Executable(); err != nil {
			return
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), reaperEnv+"="+varDir)
		cmd.Dir = varDir
		// Its own session: neither go test's timeout nor a ^C in the terminal reaches it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err = cmd.Start(); err == nil {
			err = cmd.Process.Release()
		}
	})
	if err != nil {
		return errorf("start reaper: %w", err)
	}
	return nil
}

// claimAll takes every marked server away from the reaper.
func claimAll(varDir string) error {
	err := os.RemoveAll(filepath.Join(varDir, "reap"))
	if err != nil {
		return errorf("%w", err)
	}
	return nil
}

func marked(varDir string) []string {
	entries, _ := os.ReadDir(filepath.Join(varDir, "reap"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// reap waits until no test process has held users.lock for grace, then stops the marked servers.
func reap(varDir string, grace, poll time.Duration, log *slog.Logger) {
	self, err := os.OpenFile(filepath.Join(varDir, "reaper.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		log.Error("reaper", "err", err)
		return
	}
	// Lock files, nothing written: closing them only drops the locks.
	defer func() { _ = self.Close() }()
	if flock(self, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // another reaper watches
	}
	u, err := os.OpenFile(filepath.Join(varDir, "users.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		log.Error("reaper", "err", err)
		return
	}
	defer func() { _ = u.Close() }()

	var idleSince time.Time
	for {
		time.Sleep(poll)
		if len(marked(varDir)) == 0 {
			// A process may mark a server and fail to start a second reaper just as this one
			// decides there is nothing left: look again after letting go.
			_ = flock(self, syscall.LOCK_UN)
			if len(marked(varDir)) == 0 || flock(self, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				return
			}
			continue
		}
		if flock(u, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			idleSince = time.Time{}
			continue
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) < grace {
			_ = flock(u, syscall.LOCK_UN)
			continue
		}
		// Read the marks only now, holding the lock: teststack up claims servers under it.
		for _, name := range marked(varDir) {
			if err := stopServer(varDir, name); err != nil {
				log.Error("stop test server", "server", name, "err", err)
				continue
			}
			log.Info("stopped test server nobody uses", "server", name)
			_ = os.Remove(filepath.Join(varDir, "reap", name))
		}
		_ = flock(u, syscall.LOCK_UN)
		return
	}
}

func stopServer(varDir, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch name {
	case markClickHouse:
		return chserver.StopDir(ctx, varDir)
	case markPostgres:
		return pgserver.StopDir(ctx, varDir)
	}
	return fmt.Errorf("unknown server %q", name)
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
