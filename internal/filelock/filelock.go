// Package filelock owns the cross-process file locks that keep two processes
// sharing a var directory from starting a server on the same files at once.
// It knows nothing of the servers.
package filelock

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock takes an exclusive flock on path, waiting until ctx is done, so that processes
// sharing a var directory do not start two servers on the same files at once. The lock goes
// with the process, so a crashed holder never wedges the others.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	// Nothing is written to the lock file: closing it only drops the lock.
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
