package placement

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// releaseVm frees a VM's claim (on one host when HostID is set: the source
// after a migration, the old claim after a confirmed resize). Releasing
// what is not held is a no-op, so a redelivered ReleaseVm changes nothing.
//
// A stopped VM keeps its disks and addresses: a plain release frees host
// capacity only. VolumeIDs frees those volumes' pool claims and nothing
// else (deleted data volumes of a VM that may be running); AllVolumes
// frees every volume claim too (the disks were destroyed) and Nics the
// VM's addresses (the VM was expunged).
func (m *Machine) releaseVm(z *schemas.ZoneRecord, req *schemas.ReleaseVm, now time.Time, hdr map[string]string) []schemas.Record {
	ix := m.index(z)
	var out []schemas.Record
	t := &touched{}
	switch {
	case len(req.VolumeIDs) > 0:
		ix.releaseVolumes(req.VmID, req.VolumeIDs, t)
	default:
		for _, ev := range ix.release(req.VmID, req.HostID, req.RequestID, now) {
			out = append(out, event(z.ZoneID, ev, hdr))
		}
		if req.AllVolumes {
			ix.releaseVolumes(req.VmID, nil, t)
		}
	}
	if req.Nics {
		ix.releaseNics(req.VmID, t)
	}
	return append(out, ix.events(t, now, hdr)...)
}
