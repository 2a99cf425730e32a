package qemu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// launch starts QEMU for g on host as a daemon and makes it g's process;
// incoming, when set, makes it wait for a migration stream from that URI
// instead of booting. The caller holds the VM's lock and has made sure no
// process of the VM runs on host (reconcile), so what the files of a
// killed one left behind may go. It checks once more, on every host, that
// no process runs the VM but source (a migration's, else 0): the last
// guard before a second copy could start.
//
// The guest is not the agent's child: QEMU's -daemonize forks it into a
// session of its own and the process we run exits once the guest is ready
// (pid file written, monitors listening) or has failed, so that an agent
// that exits, crashes or is upgraded leaves its guests running, and the
// next one finds them by their pid files (adopt.go).
func (d *Driver) launch(ctx context.Context, g *guest, host, incoming string, source int) error {
	if h, pid := anyLive(g.dir, source); pid != 0 {
		return fmt.Errorf("vm %s already runs on host %s (pid %d)", g.id, h, pid)
	}
	ctl := filepath.Join(g.dir, host+".qmp")
	ext := filepath.Join(g.dir, "ext.qmp")
	if incoming != "" {
		ext = filepath.Join(g.dir, host+"-ext.qmp")
	}
	pidfile := pidPath(g.dir, host)
	console := filepath.Join(g.dir, host+".console")
	for _, stale := range []string{ctl, ext, pidfile, console} {
		// Best effort: one that stays makes QEMU fail, and says so.
		_ = os.Remove(stale)
	}
	d.mu.Lock()
	rescued := g.rescued
	d.mu.Unlock()
	devices, err := d.deviceArgs(g, host, rescued)
	if err != nil {
		return fmt.Errorf("vm %s: %w", g.id, err)
	}
	args := []string{
		"-nodefaults", "-nographic", "-no-user-config",
		"-name", g.id,
		"-machine", "pc,accel=" + d.cfg.Accel,
		"-m", strconv.FormatInt(d.memoryMB(g), 10), "-smp", "1",
		"-parallel", "none", "-monitor", "none",
		// Our monitor, and a second one for operators: an out-of-band
		// quit or stop there is seen through our monitor's events.
		"-qmp", "unix:" + ctl + ",server=on,wait=off",
		"-qmp", "unix:" + ext + ",server=on,wait=off",
		"-pidfile", pidfile, "-daemonize",
	}
	args = append(args, devices...)
	if rescued {
		args = append(args, "-boot", "order=n")
	}
	if incoming != "" {
		args = append(args, "-incoming", incoming)
	}
	logPath := filepath.Join(g.dir, host+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("log of vm %s: %w", g.id, err)
	}
	cmd := exec.CommandContext(ctx, d.cfg.Binary, args...)
	// Its own session from the first process on: nothing sent to the
	// agent's process group (a terminal's Ctrl-C) reaches a guest.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// QEMU's messages until it is ready; a daemon writes nothing after.
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Run()
	// QEMU wrote through its own descriptor, and the log is for
	// diagnosis only: a failed close is worth a line, not a failed start.
	if cerr := logf.Close(); cerr != nil {
		d.cfg.Logger.Warn("qemu: start log not closed", "path", logPath, "err", cerr)
	}
	if err != nil {
		return fmt.Errorf("run %s: %w: %s", d.cfg.Binary, err, tail(logPath))
	}
	pid := readPid(pidfile)
	p := d.attach(g.id, g.dir, host, pid)
	if p == nil {
		return fmt.Errorf("qemu exited at start: %s", tail(logPath))
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.waitConnected(wctx); err != nil {
		// Just started and out of reach: nobody else knows it yet.
		p.kill()
		return fmt.Errorf("qemu pid %d of vm %s: %w: %s", pid, g.id, err, tail(logPath))
	}
	d.mu.Lock()
	g.proc = p
	d.mu.Unlock()
	return nil
}

// tail is the end of a QEMU log, for an error message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	if s == "" {
		return "no output (" + path + ")"
	}
	return s
}
