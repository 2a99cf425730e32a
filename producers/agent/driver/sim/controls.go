package sim

import (
	"fmt"

	"github.com/vmplane/vmplane/producers/agent"
)

// CrashHost makes a host fail hard: every VM on it powers off (they stay
// defined, as after a power loss), and nothing can be observed or done on it
// until RecoverHost. Its agent goes silent, as the agent of a dead host does.
func (d *Driver) CrashHost(id string) error {
	return d.control(id, func(h *host) {
		h.crashed = true
		for i := range h.vms {
			h.vms[i].power = powerOff
		}
	})
}

// RecoverHost boots a crashed host again; its VMs stay off, and commands
// issued before are void there (UpSince).
func (d *Driver) RecoverHost(id string) error {
	now := d.cfg.Clock().UnixMilli()
	return d.control(id, func(h *host) {
		if h.crashed {
			h.upSince = now
		}
		h.crashed = false
	})
}

// Partition cuts a host off the network: its VMs keep running, but its agent
// can neither report nor act until Heal.
func (d *Driver) Partition(id string) error {
	return d.control(id, func(h *host) { h.partitioned = true })
}

// Heal ends a partition.
func (d *Driver) Heal(id string) error {
	return d.control(id, func(h *host) { h.partitioned = false })
}

// OutOfBand changes a VM's power state behind vmplane's back (an operator
// pausing it, a guest shutting down, a kill) and signals it on Changes. The
// state is one of schemas.PowerOn, PowerOff, PowerPaused and PowerSusp.
func (d *Driver) OutOfBand(hostID, vmID, state string) (err error) {
	defer d.persist(&err)
	p, ok := parsePower(state)
	if !ok {
		return fmt.Errorf("out-of-band %s: unknown power state %q", vmID, state)
	}
	h, ok := d.hosts[hostID]
	if !ok {
		return fmt.Errorf("out-of-band %s: host %s: %w", vmID, hostID, agent.ErrUnknownHost)
	}
	h.mu.Lock()
	i, ok := h.index[vmID]
	if ok {
		h.vms[i].power = p
	}
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("out-of-band %s on %s: %w", vmID, hostID, agent.ErrUnknownVM)
	}
	d.signal(hostID, vmID)
	return nil
}

func (d *Driver) control(id string, f func(*host)) (err error) {
	defer d.persist(&err)
	h, ok := d.hosts[id]
	if !ok {
		return fmt.Errorf("host %s: %w", id, agent.ErrUnknownHost)
	}
	h.mu.Lock()
	f(h)
	h.mu.Unlock()
	return nil
}

// Guests returns the power state of every VM defined on a host, whatever
// the host's condition: the truth a crashed or partitioned host hides from
// its agent, for tests and the simulation to check against.
func (d *Driver) Guests(hostID string) map[string]string {
	h, ok := d.hosts[hostID]
	if !ok {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.vms))
	for _, v := range h.vms {
		out[v.id] = powerNames[v.power]
	}
	return out
}
