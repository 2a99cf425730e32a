package qemu

import (
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

// epochsDir holds, under Config.Dir, the newest VM epoch each host admitted
// for each VM (agent.Driver.Admit): .epochs/<host>/<vm>, one small file
// each, replaced by renaming a complete file into place. A VM id never
// starts with a dot, so no guest's directory is named so; the files outlive
// the agent process and the VM's own directory, which Destroy removes.
const epochsDir = ".epochs"

// Admit records the VM epoch of a command carried out on the host,
// refusing one older than an epoch admitted there before.
func (d *Driver) Admit(hostID, vmID string, epoch int64) (bool, error) {
	if _, ok := d.hosts[hostID]; !ok {
		return false, fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	if !validID(hostID) || !validID(vmID) {
		return false, fmt.Errorf("admit: host %q or vm %q is not a valid id", hostID, vmID)
	}
	d.epochMu.Lock()
	defer d.epochMu.Unlock()
	path := filepath.Join(d.cfg.Dir, epochsDir, hostID, vmID)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		last, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil {
			return false, fmt.Errorf("admit: %s: %w", path, perr)
		}
		if epoch <= last {
			return epoch == last, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("admit: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("admit: %w", err)
	}
	if err := atomicfile.Write(path, []byte(strconv.FormatInt(epoch, 10)+"\n")); err != nil {
		return false, fmt.Errorf("admit: %w", err)
	}
	return true, nil
}
