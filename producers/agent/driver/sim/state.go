package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vmplane/vmplane/internal/atomicfile"
	"github.com/vmplane/vmplane/producers/agent"
)

// stateFile keeps the simulated hosts in a file (Config.StateFile), so that
// a restarted sim agent finds the VMs it left, in the same power states, and
// its crashed or partitioned hosts still so: guests belong to their hosts,
// not to the agent process, and a killed agent is no host reboot.
//
// The whole state is written after every change, by temp file, fsync and
// rename, before the operation returns: a kill leaves the old or the new
// file, and an operation that succeeded is in it. Saves that wait for one
// another are merged: a save that starts after a change was made covers it.
// Without a state file nothing of this runs (one nil check per operation).
type stateFile struct {
	path string
	// changes counts the changes made; saved is the count the file holds.
	changes atomic.Uint64
	mu      sync.Mutex
	saved   uint64
	// moving is held shared by a migration from before it locks its
	// source until the VM is on its destination, and exclusively by a
	// snapshot: the file never shows a VM on neither host.
	moving sync.RWMutex
}

// savedState is the file's JSON.
type savedState struct {
	Hosts []savedHost `json:"hosts"`
}

type savedHost struct {
	ID          string                  `json:"id"`
	Crashed     bool                    `json:"crashed,omitempty"`
	Partitioned bool                    `json:"partitioned,omitempty"`
	VMs         []savedVM               `json:"vms,omitempty"`
	UpSince     int64                   `json:"up_since,omitempty"`
	Ledgers     map[string]agent.Ledger `json:"ledgers,omitempty"`
	Snapshots   map[string][]string     `json:"snapshots,omitempty"`
	Disks       map[string]*disks       `json:"disks,omitempty"`
}

type savedVM struct {
	ID       string `json:"id"`
	CPU      uint16 `json:"cpu"`
	MemoryMB uint32 `json:"memory_mb"`
	Power    string `json:"power"`
	Rescued  bool   `json:"rescued,omitempty"`
}

// load fills the hosts from the state file; a missing file leaves them up
// and empty. Hosts in the file the configuration no longer has are
// ignored.
func (d *Driver) load() error {
	data, err := os.ReadFile(d.state.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sim: read state file: %w", err)
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("sim: state file %s: %w", d.state.path, err)
	}
	for _, sh := range st.Hosts {
		h, ok := d.hosts[sh.ID]
		if !ok {
			continue
		}
		h.crashed, h.partitioned, h.upSince, h.ledgers = sh.Crashed, sh.Partitioned, sh.UpSince, sh.Ledgers
		h.snapshots = sh.Snapshots
		h.disks = sh.Disks
		for _, sv := range sh.VMs {
			p, ok := parsePower(sv.Power)
			if !ok {
				return fmt.Errorf("sim: state file %s: vm %s on %s: unknown power state %q", d.state.path, sv.ID, sh.ID, sv.Power)
			}
			h.add(vm{id: sv.ID, cpu: sv.CPU, memoryMB: sv.MemoryMB, power: p, rescued: sv.Rescued})
		}
	}
	return nil
}

// persist saves the state after an operation that succeeded (*err is nil),
// and makes the operation fail if the save does. Operations defer it before
// they lock a host, so it runs once the host is unlocked.
func (d *Driver) persist(err *error) {
	// Small enough to be inlined: without a state file this is the cost.
	if d.state != nil && *err == nil {
		*err = d.state.save(d)
	}
}

func (s *stateFile) save(d *Driver) error {
	mine := s.changes.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved >= mine {
		return nil // a save that began after this change wrote it
	}
	// Every change counted up to now was made before it was counted, so
	// the snapshot below holds it.
	upTo := s.changes.Load()
	s.moving.Lock()
	st := d.snapshot()
	s.moving.Unlock()
	if err := writeState(s.path, st); err != nil {
		return err
	}
	s.saved = upTo
	return nil
}

// snapshot copies every host that has VMs or is down, one host lock at a
// time.
func (d *Driver) snapshot() savedState {
	var st savedState
	for _, id := range d.order {
		h := d.hosts[id]
		h.mu.Lock()
		if len(h.vms) > 0 || h.crashed || h.partitioned || h.upSince != 0 || len(h.ledgers) > 0 || len(h.snapshots) > 0 || len(h.disks) > 0 {
			sh := savedHost{ID: id, Crashed: h.crashed, Partitioned: h.partitioned, VMs: make([]savedVM, len(h.vms)),
				UpSince: h.upSince, Ledgers: maps.Clone(h.ledgers), Snapshots: maps.Clone(h.snapshots), Disks: cloneDisks(h.disks)}
			for i, v := range h.vms {
				sh.VMs[i] = savedVM{ID: v.id, CPU: v.cpu, MemoryMB: v.memoryMB, Power: powerNames[v.power], Rescued: v.rescued}
			}
			st.Hosts = append(st.Hosts, sh)
		}
		h.mu.Unlock()
	}
	return st
}

// writeState replaces the file (internal/atomicfile: a crash or a power
// loss leaves the old state or the new one).
func writeState(path string, st savedState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("sim: encode state: %w", err)
	}
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("sim: save state: %w", err)
	}
	return nil
}
