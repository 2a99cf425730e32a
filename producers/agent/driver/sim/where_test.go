package sim

import (
	"slices"
	"testing"
)

// TestHostsOf: the index of which hosts hold a VM follows starts,
// migrations and destroys, as the hosts' own lists do.
func TestHostsOf(t *testing.T) {
	ctx := t.Context()
	d := newSim(t, Config{})
	want := func(vm string, hosts ...string) {
		t.Helper()
		if got := d.HostsOf(vm); !slices.Equal(got, hosts) {
			t.Fatalf("HostsOf(%s) = %v, want %v", vm, got, hosts)
		}
	}
	want("a")
	for _, id := range []string{"a", "b"} {
		if err := d.Start(ctx, "h1", spec(id)); err != nil {
			t.Fatal(err)
		}
	}
	want("a", "h1")
	if err := d.Migrate(ctx, "h1", "a", "h2", spec("a")); err != nil {
		t.Fatal(err)
	}
	want("a", "h2")
	want("b", "h1")
	if err := d.Destroy(ctx, "h1", "b", nil); err != nil {
		t.Fatal(err)
	}
	want("b")
	if err := d.Start(ctx, "h1", spec("a")); err != nil {
		t.Fatal(err)
	}
	want("a", "h2", "h1")
}
