package qemu

import (
	"testing"
)

// TestAdmitOutlivesTheDriver: a host refuses an epoch older than one it
// admitted, also from a driver started later on the same directory (an
// agent restarted without its answers), and keeps hosts apart.
func TestAdmitOutlivesTheDriver(t *testing.T) {
	dir := t.TempDir()
	d, err := New(testConfig(dir, "q1", "q2"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host  string
		epoch int64
		want  bool
	}{{"q1", 1, true}, {"q1", 1, true}, {"q1", 3, true}, {"q1", 2, false}, {"q2", 2, true}} {
		if got, err := d.Admit(c.host, "vm1", c.epoch); err != nil || got != c.want {
			t.Fatalf("Admit(%s, vm1, %d) = %v, %v; want %v", c.host, c.epoch, got, err, c.want)
		}
	}
	d.Close()
	again, err := New(testConfig(dir, "q1", "q2"))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if ok, err := again.Admit("q1", "vm1", 2); err != nil || ok {
		t.Fatalf("a new driver admitted epoch 2 after 3: %v, %v", ok, err)
	}
	if ok, err := again.Admit("q1", "vm1", 3); err != nil || !ok {
		t.Fatalf("a new driver refused the current epoch 3: %v, %v", ok, err)
	}
	if _, err := again.Admit("q9", "vm1", 1); err == nil {
		t.Fatal("Admit on a host the driver does not serve succeeded")
	}
	if _, err := again.Admit("q1", "../x", 1); err == nil {
		t.Fatal("Admit took a VM id that is a path")
	}
}
