package sim

import (
	"slices"
	"sync"
)

// where is which hosts hold each VM, across every host of the driver: the
// agent asks it before starting a VM (is it running on another host?),
// and one process simulating 10,000 hosts cannot ask them one by one for
// each start. A host's lock is held while it changes its entries; where's
// own lock is taken inside it, never the other way round.
type where struct {
	mu    sync.Mutex
	hosts map[string][]string
}

func (w *where) add(vm, host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hosts == nil {
		w.hosts = make(map[string][]string)
	}
	if !slices.Contains(w.hosts[vm], host) {
		w.hosts[vm] = append(w.hosts[vm], host)
	}
}

func (w *where) remove(vm, host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	hs := slices.DeleteFunc(w.hosts[vm], func(h string) bool { return h == host })
	if len(hs) == 0 {
		delete(w.hosts, vm)
		return
	}
	w.hosts[vm] = hs
}

// HostsOf lists the hosts that hold the VM, in any power state (the
// agent's runsElsewhere, agent.VMFinder).
func (d *Driver) HostsOf(vmID string) []string {
	d.where.mu.Lock()
	defer d.where.mu.Unlock()
	return slices.Clone(d.where.hosts[vmID])
}
