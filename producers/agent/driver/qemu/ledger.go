package qemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// ledgerPath is the file of a VM's ledger on a host this driver serves.
func (d *Driver) ledgerPath(hostID, vmID string) (string, error) {
	if _, ok := d.hosts[hostID]; !ok {
		return "", fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	if !validID(hostID) || !validID(vmID) {
		return "", fmt.Errorf("ledger: host %q or vm %q is not a valid id", hostID, vmID)
	}
	return filepath.Join(d.cfg.Dir, ledgersDir, hostID, vmID+".json"), nil
}

// Ledger reads the VM's command ledger on the host; the zero Ledger when
// the host keeps none.
func (d *Driver) Ledger(hostID, vmID string) (agent.Ledger, error) {
	var l agent.Ledger
	path, err := d.ledgerPath(hostID, vmID)
	if err != nil {
		return l, err
	}
	d.ledgerMu.Lock()
	defer d.ledgerMu.Unlock()
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return l, nil
	case err != nil:
		return l, fmt.Errorf("ledger: %w", err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("ledger %s: %w", path, err)
	}
	return l, nil
}

// SetLedger replaces the VM's command ledger on the host.
func (d *Driver) SetLedger(hostID, vmID string, l agent.Ledger) error {
	path, err := d.ledgerPath(hostID, vmID)
	if err != nil {
		return err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return d.replaceFile(path, append(b, '\n'))
}

// UpSince is when the host was last fenced; 0 when it never was.
func (d *Driver) UpSince(hostID string) (int64, error) {
	path, err := d.upSincePath(hostID)
	if err != nil {
		return 0, err
	}
	d.ledgerMu.Lock()
	defer d.ledgerMu.Unlock()
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("up since: %w", err)
	}
	at, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("up since %s: %w", path, err)
	}
	return at, nil
}

// setUpSince records that the host came back at at (a fencing).
func (d *Driver) setUpSince(hostID string, at int64) error {
	path, err := d.upSincePath(hostID)
	if err != nil {
		return err
	}
	return d.replaceFile(path, []byte(strconv.FormatInt(at, 10)+"\n"))
}

// replaceFile writes one of the files under ledgersDir (atomicfile: a
// crash leaves the old content or the new one).
func (d *Driver) replaceFile(path string, b []byte) error {
	d.ledgerMu.Lock()
	defer d.ledgerMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := atomicfile.Write(path, b); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// upSincePath is the file of a host's UpSince.
func (d *Driver) upSincePath(hostID string) (string, error) {
	if _, ok := d.hosts[hostID]; !ok {
		return "", fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	if !validID(hostID) {
		return "", fmt.Errorf("up since: host %q is not a valid id", hostID)
	}
	return filepath.Join(d.cfg.Dir, ledgersDir, hostID, upSinceName), nil
}
