package placement

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// releaseVm frees a VM's claim (on one host when HostID is set: the source
// after a migration, the old claim after a confirmed resize). Releasing
// what is not held is a no-op, so a redelivered ReleaseVm changes nothing.
func (m *Machine) releaseVm(z *schemas.ZoneRecord, req *schemas.ReleaseVm, now time.Time, hdr map[string]string) []schemas.Record {
	var out []schemas.Record
	for _, ev := range m.index(z).release(req.VmID, req.HostID, req.RequestID, now) {
		out = append(out, event(z.ZoneID, ev, hdr))
	}
	return out
}
