package qemu

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A guest's QEMU writes its pid to <vm dir>/<host>.pid (-pidfile) and holds
// a lock on that file while it runs, so QEMU itself refuses a second copy on
// the same host. The file outlives a killed QEMU, and the kernel may give
// its pid to another process since, so a pid file proves nothing alone: a
// pid is taken as the VM's guest only while it exists and its command line
// still names this very pid file (which names the VM and the host). A
// zombie — nobody reaps a daemon whose parent is gone — has an empty
// command line and so counts as gone.

const pidSuffix = ".pid"

// pidPath is the pid file of the VM's QEMU on host.
func pidPath(dir, host string) string { return filepath.Join(dir, host+pidSuffix) }

// readPid returns the pid written in a pid file, 0 when there is none.
func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// isGuest reports whether pid is a live QEMU started with -pidfile pidfile.
func isGuest(pid int, pidfile string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte("\x00-pidfile\x00"+pidfile+"\x00"))
}

// livePids returns, by host, the live guests of the VM in dir on the
// driver's hosts; a pid file of any other host is not looked at.
func (d *Driver) livePids(dir string) map[string]int {
	out := map[string]int{}
	for host := range d.hosts {
		path := pidPath(dir, host)
		if pid := readPid(path); isGuest(pid, path) {
			out[host] = pid
		}
	}
	return out
}

// anyLive returns a live guest of the VM in dir on any host, another
// driver's too, but pid except; pid 0 when there is none.
func anyLive(dir string, except int) (host string, pid int) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+pidSuffix))
	for _, path := range paths {
		if pid := readPid(path); pid != except && isGuest(pid, path) {
			return strings.TrimSuffix(filepath.Base(path), pidSuffix), pid
		}
	}
	return "", 0
}
