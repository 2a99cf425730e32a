package placement

import (
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// Forget lets go of a zone's index (its partition went to another
// instance), and with it the zone it was built for.
func TestForgetLetsGoOfTheZoneIndex(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := m.Step(&schemas.ZoneRecord{ZoneID: "z1"}, rec(hostUp("h1", "c1", 8, 8192)), t0)
	m.AppendParts(nil, z.ZoneID, z, true)
	if m.indexes["z1"] == nil {
		t.Fatal("no index after a step")
	}
	m.Forget("z1")
	if len(m.indexes) != 0 {
		t.Fatalf("%d indexes left after Forget", len(m.indexes))
	}
}
