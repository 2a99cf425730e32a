package testkit

import (
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// PartsLog is the changelog a parted state's parts made (engine.Parted):
// each part's latest encoding by name, as compaction keeps it. The tests
// of placement and the lease processor write the parts a machine hands
// out into one and assemble a state from it, as a restore would.
type PartsLog map[string][]byte

// Write applies parts to the log, each through its Avro encoding; a nil
// value removes its part, as a tombstone does. A part whose value is a W
// (the state written whole) fails the test.
func Write[W any](t testing.TB, l PartsLog, parts []schemas.Part) {
	t.Helper()
	for _, p := range parts {
		if p.Value == nil {
			delete(l, p.Name)
			continue
		}
		if _, whole := p.Value.(W); whole {
			t.Fatalf("part %q is a whole state", p.Name)
		}
		b, err := schemas.Marshal(p.Value)
		if err != nil {
			t.Fatalf("marshal part %q: %v", p.Name, err)
		}
		l[p.Name] = b
	}
}

// Parts decodes the log's parts, in the order a map gives.
func (l PartsLog) Parts(t testing.TB) []schemas.Part {
	t.Helper()
	var parts []schemas.Part
	for name, b := range l {
		v, err := schemas.Unmarshal(b)
		if err != nil {
			t.Fatalf("unmarshal part %q: %v", name, err)
		}
		parts = append(parts, schemas.Part{Name: name, Value: v})
	}
	return parts
}
