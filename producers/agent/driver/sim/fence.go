package sim

import (
	"context"
	"fmt"

	"github.com/vmplane/vmplane/producers/agent"
)

var (
	_ agent.HostChecker = (*Driver)(nil)
	_ agent.Fencer      = (*Driver)(nil)
)

// The simulator's model of what a neighbour can see of a host. A host has
// a management network (what the agent and a neighbour's ping use) and
// shared storage (where running VMs write). Partition cuts the network
// only; CrashHost stops everything. So a neighbour can reach a healthy
// host, sees the VMs of a partitioned host still write to storage, and sees
// nothing at all of a crashed one — which it cannot tell from a partitioned
// host with idle VMs, so it never says Down. Fencing is the power switch.

// CheckHost looks at target from from: "neighbour" is Up when target's
// network answers, "vm-activity" is Up when one of vmIDs runs on target
// (it writes to shared storage). Everything else is Unknown.
func (d *Driver) CheckHost(ctx context.Context, fromHostID, targetHostID, method string, vmIDs []string) (string, string, error) {
	if err := d.reachable(fromHostID); err != nil {
		return "", "", fmt.Errorf("check %s from %s: %w", targetHostID, fromHostID, err)
	}
	t, ok := d.hosts[targetHostID]
	if !ok {
		return "Unknown", "target not in this simulator", nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch method {
	case "neighbour":
		if !t.crashed && !t.partitioned {
			return "Up", fmt.Sprintf("%s reaches %s", fromHostID, targetHostID), nil
		}
		return "Unknown", fmt.Sprintf("%s cannot reach %s", fromHostID, targetHostID), nil
	case "vm-activity":
		if t.crashed {
			return "Unknown", "no vm activity on shared storage", nil
		}
		for _, id := range vmIDs {
			if i, ok := t.index[id]; ok && (t.vms[i].power == powerOn || t.vms[i].power == powerPaused) {
				return "Up", fmt.Sprintf("vm %s active on shared storage", id), nil
			}
		}
		return "Unknown", "no vm activity on shared storage", nil
	}
	return "Unknown", "unknown check method " + method, nil
}

// Fence powers target off as a fencing device would: the host is down (as
// after CrashHost) until RecoverHost, whether it was crashed, partitioned or
// healthy. The device is reached from from, which must itself be reachable.
func (d *Driver) Fence(ctx context.Context, fromHostID, targetHostID string) error {
	if err := d.reachable(fromHostID); err != nil {
		return fmt.Errorf("fence %s from %s: %w", targetHostID, fromHostID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fence %s: %w", targetHostID, err)
	}
	if err := d.CrashHost(targetHostID); err != nil {
		return fmt.Errorf("fence %s: %w", targetHostID, err)
	}
	return nil
}

// reachable says whether a host can act (as a neighbour) right now.
func (d *Driver) reachable(id string) error {
	h, ok := d.hosts[id]
	if !ok {
		return fmt.Errorf("host %s: %w", id, agent.ErrUnknownHost)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.crashed || h.partitioned {
		return fmt.Errorf("host %s: %w", id, agent.ErrHostUnreachable)
	}
	return nil
}
