package schemas

import (
	"fmt"
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
// decodes in as many as it may run) share the table and read every value
// right, also while values that collide take turns in its slots.
func TestInternFromManyGoroutines(t *testing.T) {
	var bufs [][]byte
	var want []*VmRecord
	for i := range 64 {
		rec := &VmRecord{VmID: fmt.Sprintf("vm-%d", i), HostID: fmt.Sprintf("host-%d", i%13), ZoneID: fmt.Sprintf("z%d", i%3)}
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
				if got := v.(*VmRecord); got.HostID != want[i].HostID || got.ZoneID != want[i].ZoneID {
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
