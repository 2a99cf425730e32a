package qemu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/vmplane/vmplane/internal/atomicfile"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// record is what the VM's directory says of it (vm.json): the host it
// belongs to and what it is, so that a driver started later — after the
// agent crashed or was upgraded — knows which host reports the guests it
// finds there, and can start them again as they were. It is written before
// any process is started for the VM and whenever the host or the suspend
// image changes hands, by renaming a complete file into place: a crash
// leaves the old record or the new one, never half of one.
type record struct {
	Host string `json:"host"`
	Spec struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		CPU      int32  `json:"cpu"`
		MemoryMB int64  `json:"memory_mb"`
		// Volumes are the disks the guest starts with, attached ones
		// included; Nics its network interfaces.
		Volumes []schemas.Volume `json:"volumes,omitempty"`
		Nics    []schemas.Nic    `json:"nics,omitempty"`
	} `json:"spec"`
	// Rescued: the guest boots from the network (Rescue) until Unrescue.
	Rescued bool `json:"rescued,omitempty"`
	// Suspended: state.bin holds the guest's whole memory (Suspend), which
	// Resume loads back.
	Suspended bool `json:"suspended,omitempty"`
}

const recordName = "vm.json"

// readRecord reads the record in dir.
func readRecord(dir string) (record, error) {
	var r record
	b, err := os.ReadFile(filepath.Join(dir, recordName))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, recordName), err)
	}
	return r, nil
}

// writeRecord replaces the record in dir (internal/atomicfile: a crash or
// a power loss leaves the old record or the new one).
func writeRecord(dir string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, recordName), append(b, '\n')); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// save writes g's record.
func (d *Driver) save(g *guest) error {
	d.mu.Lock()
	r := g.record()
	d.mu.Unlock()
	if err := writeRecord(g.dir, r); err != nil {
		return fmt.Errorf("vm %s: %w", g.id, err)
	}
	return nil
}

// record returns what g's directory should say of it; d.mu is held.
func (g *guest) record() record {
	r := record{Host: g.host, Rescued: g.rescued, Suspended: g.suspended}
	r.Spec.ID, r.Spec.Name, r.Spec.CPU, r.Spec.MemoryMB = g.spec.ID, g.spec.Name, g.spec.CPU, g.spec.MemoryMB
	r.Spec.Volumes, r.Spec.Nics = slices.Clone(g.spec.Volumes), slices.Clone(g.spec.Nics)
	return r
}

// guestOf is the guest a record describes, without a process yet.
func guestOf(dir string, r record) *guest {
	spec := agent.VMSpec{ID: filepath.Base(dir), Name: r.Spec.Name, CPU: r.Spec.CPU, MemoryMB: r.Spec.MemoryMB,
		Volumes: r.Spec.Volumes, Nics: r.Spec.Nics}
	return &guest{id: spec.ID, host: r.Host, spec: spec, dir: dir, rescued: r.Rescued, suspended: r.Suspended}
}
