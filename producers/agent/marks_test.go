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

// TestMarksTakeRecordsPolledTwice: a record fetched again before its
// first copy is answered (the member lost and rejoined) is an entry of its
// own; the partition's marks go on once both are answered. The second
// copy's mark is made too (the group may have started below the first's:
// TestCommandsCommittedAfterTheGroupLosesItsCommits), and nothing is left
// pending.
func TestMarksTakeRecordsPolledTwice(t *testing.T) {
	var marked []int64
	m := newMarks(func(rs ...*kgo.Record) {
		for _, r := range rs {
			marked = append(marked, r.Offset)
		}
	})
	rec := func(off int64) *kgo.Record { return &kgo.Record{Topic: "t", Offset: off} }
	a9, a10 := m.add(rec(9)), m.add(rec(10))
	b9, b10 := m.add(rec(9)), m.add(rec(10))
	a10()
	b10()
	a9()
	b9()
	later := m.add(rec(11))
	later()
	if !slices.Equal(marked, []int64{10, 10, 11}) || len(m.parts) != 0 {
		t.Fatalf("marked %v, %d partitions pending; want 10 for each copy, then 11, and nothing pending", marked, len(m.parts))
	}
}
