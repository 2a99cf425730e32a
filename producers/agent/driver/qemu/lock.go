package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockVM takes the VM's lock: an flock on <vm dir>/lock, held while the
// real state is checked and a process is started, so that two drivers (two
// agents, or an agent and its restarted self) never start two copies of one
// VM. The kernel drops it when its holder dies, so a crashed agent never
// leaves it held. It waits until ctx ends; unlock releases it.
func lockVM(ctx context.Context, dir string) (unlock func(), err error) {
	path := filepath.Join(dir, "lock")
	wait := time.Millisecond
	// Nothing is written to the lock file: closing it only drops the lock.
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// Destroy removes the directory with its lock file while it
			// holds the lock: a lock taken on that removed file guards
			// nothing, so take the one now at the path.
			if held, now := stat(f), statPath(path); held != nil && now != nil && os.SameFile(held, now) {
				return func() { _ = f.Close() }, nil
			}
			_ = f.Close()
			continue
		}
		_ = f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: held by another process: %w", dir, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

func stat(f *os.File) os.FileInfo {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	return fi
}

func statPath(path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
}
