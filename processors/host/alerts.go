package host

import (
	"fmt"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Kinds of the alerts a host raises (docs/design.md §6): each is an
// AlertRaised on vm.events.v1 keyed by the host id, where the read model,
// the journal and the event streams take it like a VM's alert.
const (
	AlertDisconnected       = "HostDisconnected"
	AlertHostAlert          = "HostAlert"
	AlertHostDown           = "HostDown"
	AlertFencing            = "HostFencing"
	AlertErrorInMaintenance = "ErrorInMaintenance"
)

// raise returns the alert of kind about host r. Its id comes from the
// host, the kind and the input's time, so a redelivered input raises the
// same alert and the read model keeps it once.
func raise(r *schemas.HostRecord, kind, msg string, now time.Time, hdr map[string]string) schemas.Record {
	st := &r.Status
	id := schemas.BoundID(fmt.Sprintf("host:%s:%s:%d", st.HostID, kind, now.UnixMilli()))
	return schemas.Record{Topic: schemas.TopicVmEvents, Key: st.HostID, Headers: hdr, Value: &schemas.AlertRaised{
		AlertID: id, Kind: kind, HostID: st.HostID, ZoneID: st.ZoneID, Message: msg, At: now.UnixMilli()}}
}
