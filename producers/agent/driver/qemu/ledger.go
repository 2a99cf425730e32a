package qemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vmplane/vmplane/internal/atomicfile"
	"github.com/vmplane/vmplane/producers/agent"
)

// ledgersDir holds, under Config.Dir, each host's command ledger of each VM
// (agent.Ledger): .ledgers/<host>/<vm>.json, and when the host was last
// fenced (agent.Driver.UpSince: a fenced emulated host is back at once,
// its guests killed): .ledgers/<host>/.up_since. Each is replaced by
// renaming a complete file into place. A VM id never starts with a dot, so
// no guest's directory is named so; the files outlive the agent process
// and the VM's own directory, which Destroy removes.
const (
	ledgersDir  = ".ledgers"
	upSinceName = ".up_since"
)

// hostFile is the file name under a served host's directory of ledgersDir.
func (d *Driver) hostFile(hostID, name string) (string, error) {
	if _, ok := d.hosts[hostID]; !ok {
		return "", fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	if !validID(hostID) {
		return "", fmt.Errorf("ledger: host %q is not a valid id", hostID)
	}
	return filepath.Join(d.cfg.Dir, ledgersDir, hostID, name), nil
}

// ledgerPath is the file of a VM's ledger on a host this driver serves.
func (d *Driver) ledgerPath(hostID, vmID string) (string, error) {
	if !validID(vmID) {
		return "", fmt.Errorf("ledger: vm %q is not a valid id", vmID)
	}
	return d.hostFile(hostID, vmID+".json")
}

// Ledger reads the VM's command ledger on the host; the zero Ledger when
// the host keeps none.
func (d *Driver) Ledger(hostID, vmID string) (agent.Ledger, error) {
	var l agent.Ledger
	path, err := d.ledgerPath(hostID, vmID)
	if err != nil {
		return l, err
	}
	return l, d.readJSON(path, &l)
}

// SetLedger replaces the VM's command ledger on the host.
func (d *Driver) SetLedger(hostID, vmID string, l agent.Ledger) error {
	path, err := d.ledgerPath(hostID, vmID)
	if err != nil {
		return err
	}
	return d.writeJSON(path, l)
}

// UpSince is when the host was last fenced; 0 when it never was.
func (d *Driver) UpSince(hostID string) (int64, error) {
	var at int64
	path, err := d.hostFile(hostID, upSinceName)
	if err != nil {
		return 0, err
	}
	return at, d.readJSON(path, &at)
}

// setUpSince records that the host came back at at (a fencing).
func (d *Driver) setUpSince(hostID string, at int64) error {
	path, err := d.hostFile(hostID, upSinceName)
	if err != nil {
		return err
	}
	return d.writeJSON(path, at)
}

// readJSON decodes one of the files under ledgersDir into v; a missing
// file leaves v as it is.
func (d *Driver) readJSON(path string, v any) error {
	d.ledgerMu.Lock()
	defer d.ledgerMu.Unlock()
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("ledger: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	return nil
}

// writeJSON replaces one of the files under ledgersDir with v (atomicfile:
// a crash leaves the old content or the new one).
func (d *Driver) writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	d.ledgerMu.Lock()
	defer d.ledgerMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}
