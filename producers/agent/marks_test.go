package agent

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMarksWaitForEarlierRecords: a record is marked only once every
// earlier record of its partition is finished, whatever order they finish
// in; partitions do not wait for each other.
func TestMarksWaitForEarlierRecords(t *testing.T) {
	var marked []string
	m := newMarks(func(rs ...*kgo.Record) {
		for _, r := range rs {
			marked = append(marked, string(r.Key))
		}
	})
	rec := func(part int32, off int64, key string) *kgo.Record {
		return &kgo.Record{Topic: "t", Partition: part, Offset: off, Key: []byte(key)}
	}
	slow := m.add(rec(0, 10, "slow migration"))
	quick := m.add(rec(0, 11, "quick stop"))
	other := m.add(rec(1, 5, "other partition"))
	quick()
	other()
	if !slices.Equal(marked, []string{"other partition"}) {
		t.Fatalf("marked %q before the slow command was answered", marked)
	}
	slow()
	if !slices.Equal(marked, []string{"other partition", "quick stop"}) {
		t.Fatalf("marked %q; want the quick stop once the slow one is answered", marked)
	}
	later := m.add(rec(0, 12, "later"))
	later()
	if !slices.Equal(marked, []string{"other partition", "quick stop", "later"}) || len(m.parts) != 0 {
		t.Fatalf("marked %q, %d partitions left", marked, len(m.parts))
	}
}
