package schemas

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// TestInternedFieldsShareTheirBytes: two records decoded apart hold one
// copy of a string of an intern field, and their own copies of the
// others'; a value too long to intern is copied as any other.
func TestInternedFieldsShareTheirBytes(t *testing.T) {
	long := strings.Repeat("x", maxInterned+1)
	rec := &VmRecord{VmID: "vm1", Name: "web", ZoneID: "z1", HostID: "host-1", PowerHost: "host-1", Account: long,
		Rare: &VmRare{TaskState: "Starting", MaybeOn: []string{"host-2"}}}
	b, err := Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	decode := func() *VmRecord {
		v, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return v.(*VmRecord)
	}
	one, two := decode(), decode()
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	for _, f := range []struct {
		name string
		a, b string
	}{
		{"zone_id", one.ZoneID, two.ZoneID},
		{"host_id", one.HostID, two.HostID},
		{"power_host and host_id", one.PowerHost, two.HostID},
		{"task_state", one.Rare.TaskState, two.Rare.TaskState},
		{"maybe_on", one.Rare.MaybeOn[0], two.Rare.MaybeOn[0]},
	} {
		if !same(f.a, f.b) {
			t.Errorf("%s: two copies of %q", f.name, f.a)
		}
	}
	if same(one.VmID, two.VmID) || same(one.Name, two.Name) {
		t.Errorf("vm_id or name shared: they are not interned")
	}
	if same(one.Account, two.Account) || one.Account != long {
		t.Errorf("an account of %d bytes interned", len(long))
	}
}

// TestInternFromManyGoroutines: readers in several goroutines (a restore
// decodes in as many as it may run) share the tables and read every value
// right, strings and one-entry maps, also while values that collide take
// turns in their slots.
func TestInternFromManyGoroutines(t *testing.T) {
	var bufs [][]byte
	var want []*VmRecord
	for i := range 64 {
		host := fmt.Sprintf("host-%d", i%13)
		rec := &VmRecord{VmID: fmt.Sprintf("vm-%d", i), HostID: host, ZoneID: fmt.Sprintf("z%d", i%3),
			ReportSeq: map[string]int64{host: int64(i % 5)}}
		b, err := Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		bufs, want = append(bufs, b), append(want, rec)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for n := range 2000 {
				i := (n*7 + g) % len(bufs)
				v, err := Unmarshal(bufs[i])
				if err != nil {
					errs <- err
					return
				}
				if got := v.(*VmRecord); got.HostID != want[i].HostID || got.ZoneID != want[i].ZoneID || !maps.Equal(got.ReportSeq, want[i].ReportSeq) {
					errs <- fmt.Errorf("record %d read as %+v", i, got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestInternedLongMapsAreShared: a one-entry report_seq decodes as one map
// that every record with the same entry shares; another entry, or more
// entries, are maps of their own, and every value reads right.
func TestInternedLongMapsAreShared(t *testing.T) {
	decode := func(seqs map[string]int64) map[string]int64 {
		b, err := Marshal(&VmRecord{VmID: "vm1", HostID: "host-1", ReportSeq: seqs})
		if err != nil {
			t.Fatal(err)
		}
		v, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		got := v.(*VmRecord).ReportSeq
		if len(seqs) == 0 && len(got) == 0 {
			return got
		}
		if !maps.Equal(got, seqs) {
			t.Fatalf("report_seq %v read as %v", seqs, got)
		}
		return got
	}
	same := func(a, b map[string]int64) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	one := map[string]int64{"host-1": 5}
	if a, b := decode(one), decode(maps.Clone(one)); !same(a, b) {
		t.Errorf("{host-1: 5} decoded twice: two maps")
	}
	if a, b := decode(one), decode(map[string]int64{"host-1": 6}); same(a, b) {
		t.Errorf("{host-1: 5} and {host-1: 6} share a map")
	}
	if a, b := decode(one), decode(map[string]int64{"host-2": 5}); same(a, b) {
		t.Errorf("{host-1: 5} and {host-2: 5} share a map")
	}
	two := map[string]int64{"host-1": 5, "host-2": 9}
	if a, b := decode(two), decode(two); same(a, b) {
		t.Errorf("a map of two entries is shared")
	}
	if got := decode(nil); got != nil {
		t.Errorf("no report_seq read as %v", got)
	}
}

// seqBlocks is a record with an interned long map, to read it from
// several blocks.
type seqBlocks struct {
	Seqs map[string]int64 `avro:"seqs" doc:"Longs by key." intern:"true"`
	Name string           `avro:"name" doc:"A string after them."`
}

// TestInternedLongMapFromBlocks: an interned map whose first block holds
// one entry and a later block more (as other writers may split it) is the
// record's own with every entry; a bad key fails the record.
func TestInternedLongMapFromBlocks(t *testing.T) {
	str := func(s string) []byte { return appendString(nil, s) }
	var b []byte
	b = append(append(append(b, 2), str("h1")...), 14)    // 1 item: h1 7
	b = append(append(append(b, 2), str("h2")...), 16, 0) // 1 item: h2 8, end
	b = append(b, str("end")...)
	p := planOf(reflect.TypeFor[seqBlocks]())
	want := &seqBlocks{Seqs: map[string]int64{"h1": 7, "h2": 8}, Name: "end"}
	for range 2 {
		got, err := decodeBodyFast(b, p, false)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v (%v), want %+v", got, err, want)
		}
		got.(*seqBlocks).Seqs["h3"] = 9 // its own: the next decode does not see it
	}
	bad := append(append(append([]byte{}, 2), str("h\x001")...), 14, 0)
	bad = append(bad, str("end")...)
	if _, err := decodeBodyFast(bad, p, false); err == nil {
		t.Fatalf("a key with a NUL byte decoded")
	}
}

// TestLongKeyMapsAreOwn: a one-entry map whose key is too long to intern
// is the record's own, so that the table's bound holds.
func TestLongKeyMapsAreOwn(t *testing.T) {
	key := strings.Repeat("h", maxInterned+1)
	if a, b := internLongMap([]byte(key), 1), internLongMap([]byte(key), 1); reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() || a[key] != 1 {
		t.Fatalf("a key of %d bytes: maps %v and %v shared", len(key), a, b)
	}
}
