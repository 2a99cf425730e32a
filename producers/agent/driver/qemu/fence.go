package qemu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
)

var (
	_ agent.HostChecker = (*Driver)(nil)
	_ agent.Fencer      = (*Driver)(nil)
)

// The QEMU driver's hosts are named shares of one machine, served by one
// agent process: what the host processor's investigators can learn of them
// is limited by that, and the answers below say no more than is true.
//
//   - A host is reachable exactly when the agent serving it runs: an agent
//     that answers a check is that process, so "neighbour" says Up for any
//     host of its own, and Unknown for a host it does not serve (it has no
//     way to reach another machine's QEMU).
//   - "vm-activity" is Up when one of the VMs still has a live QEMU process
//     on the target: the process itself is the activity.
//   - Fencing cannot power a machine off (there is no IPMI here, and the
//     machine is the one the agent runs on). It kills every guest of the
//     target with SIGKILL and waits for the processes to be gone, which is
//     what fencing is for: no VM of the host may run once HA restarts it
//     elsewhere. The host itself stays "on": its agent keeps pinging and
//     the host processor sees it come back. A host served by an agent that
//     is itself gone cannot be fenced by anyone, so it ends in Alert, never
//     Down — the safe answer.

// CheckHost looks at target from from; see above for what it can tell.
func (d *Driver) CheckHost(ctx context.Context, fromHostID, targetHostID, method string, vmIDs []string) (string, string, error) {
	if _, ok := d.hosts[fromHostID]; !ok {
		return "", "", fmt.Errorf("check %s from %s: %w", targetHostID, fromHostID, agent.ErrUnknownHost)
	}
	if _, ok := d.hosts[targetHostID]; !ok {
		return "Unknown", "target not served by this agent", nil
	}
	switch method {
	case "neighbour":
		return "Up", fmt.Sprintf("%s and %s are served by the same running agent", fromHostID, targetHostID), nil
	case "vm-activity":
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, id := range vmIDs {
			if g, ok := d.vms[id]; ok && g.host == targetHostID && g.proc != nil && g.proc.alive() {
				return "Up", fmt.Sprintf("vm %s has a live qemu process (pid %d)", id, g.proc.pid), nil
			}
		}
		return "Unknown", "no qemu process of the listed vms", nil
	}
	return "Unknown", "unknown check method " + method, nil
}

// Fence kills every guest of target (SIGKILL) and returns once their
// processes have exited: after a nil error no VM of target runs.
func (d *Driver) Fence(ctx context.Context, fromHostID, targetHostID string) error {
	if _, ok := d.hosts[fromHostID]; !ok {
		return fmt.Errorf("fence %s from %s: %w", targetHostID, fromHostID, agent.ErrUnknownHost)
	}
	if _, ok := d.hosts[targetHostID]; !ok {
		return fmt.Errorf("fence %s: %w", targetHostID, agent.ErrUnknownHost)
	}
	d.mu.Lock()
	var procs []*process
	for _, g := range d.vms {
		if g.host == targetHostID && g.proc != nil && !slices.Contains(procs, g.proc) {
			procs = append(procs, g.proc)
		}
	}
	d.mu.Unlock()
	for _, p := range procs {
		if p.alive() {
			p.kill()
		}
	}
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-ctx.Done():
			return fmt.Errorf("fence %s: guests still running: %w", targetHostID, ctx.Err())
		}
	}
	strays, err := d.killStrays(ctx, targetHostID)
	if err != nil {
		return fmt.Errorf("fence %s: %w", targetHostID, err)
	}
	if err := d.setUpSince(targetHostID, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("fence %s: %w", targetHostID, err)
	}
	d.cfg.Logger.Warn("qemu host fenced: its guests were killed", "host", targetHostID, "guests", len(procs), "unwatched", strays)
	return nil
}

// killStrays kills the guests of host that the driver does not watch — a
// second copy it left alone, one not adopted yet — found by their pid
// files: fencing is about what runs, not about what the driver knows.
func (d *Driver) killStrays(ctx context.Context, host string) (int, error) {
	entries, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		return 0, err
	}
	type stray struct {
		pid     int
		pidfile string
	}
	var found []stray
	for _, e := range entries {
		path := pidPath(filepath.Join(d.cfg.Dir, e.Name()), host)
		pid := readPid(path)
		if !e.IsDir() || pid == 0 {
			continue
		}
		// Pinned first, checked then: the kill cannot reach a process
		// that took the pid in between.
		if p, err := os.FindProcess(pid); err == nil {
			if isGuest(pid, path) {
				_ = p.Kill() // fails only when it is gone already
				found = append(found, stray{pid, path})
			}
			_ = p.Release() // frees the pidfd
		}
	}
	for _, s := range found {
		for isGuest(s.pid, s.pidfile) {
			select {
			case <-ctx.Done():
				return len(found), fmt.Errorf("guest pid %d still running: %w", s.pid, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return len(found), nil
}
