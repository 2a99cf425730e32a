package lease

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// checkParts writes the parts of z the machine says changed to log (every
// part, the first time), assembles a zone from the log as a restore would
// and compares it with z: a change the machine did not mark would be lost
// by a restart. With restore, it returns the assembled zone, which the
// caller goes on with as a restarted processor would; else z.
func checkParts(t *testing.T, m *Machine, log testkit.PartsLog, z *schemas.LeaseZoneRecord, restore bool) *schemas.LeaseZoneRecord {
	t.Helper()
	testkit.Write[*schemas.LeaseZoneRecord](t, log, m.AppendParts(nil, z.ZoneID, z, len(log) == 0))
	back, err := New(DefaultConfig()).Assemble(z.ZoneID, log.Parts(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := canonZone(t, back), canonZone(t, z); !reflect.DeepEqual(got, want) {
		t.Fatalf("the zone assembled from its parts differs:\n got %+v\nwant %+v", got, want)
	}
	if restore {
		return back
	}
	return z
}

// canonZone is z through its Avro encoding (so that an empty list and none
// compare equal) with its hosts and claims in id order: the order of a
// zone's lists in memory is not state (Assemble).
func canonZone(t *testing.T, z *schemas.LeaseZoneRecord) *schemas.LeaseZoneRecord {
	t.Helper()
	c := testkit.ThroughAvro(t, z)
	slices.SortFunc(c.Hosts, func(a, b schemas.LeaseHost) int { return strings.Compare(a.HostID, b.HostID) })
	slices.SortFunc(c.Vms, func(a, b schemas.LeaseVm) int {
		return strings.Compare(a.VmID+"\x00"+a.HostID, b.VmID+"\x00"+b.HostID)
	})
	return c
}

// Forget lets go of a zone's index (its partition went to another
// instance), and with it the zone it was built for.
func TestForgetLetsGoOfTheZoneIndex(t *testing.T) {
	m := New(DefaultConfig())
	z := &schemas.LeaseZoneRecord{ZoneID: "z1", Hosts: []schemas.LeaseHost{{HostID: "h1"}}}
	m.AppendParts(nil, z.ZoneID, z, true)
	if m.indexes["z1"] == nil {
		t.Fatal("no index after AppendParts")
	}
	m.Forget("z1")
	if len(m.indexes) != 0 {
		t.Fatalf("%d indexes left after Forget", len(m.indexes))
	}
}
