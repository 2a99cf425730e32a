package qemu

import (
	"slices"
	"testing"

	"github.com/vmplane/vmplane/producers/agent"
)

// TestLedgerOutlivesTheDriver: a VM's ledger written on one host is read
// back by a driver started later on the same directory (an agent restarted
// without its answers), kept apart from the other host's, and refused for
// a host the driver does not serve or an id that is a path.
func TestLedgerOutlivesTheDriver(t *testing.T) {
	dir := t.TempDir()
	d, err := New(testConfig(dir, "q1", "q2"))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := d.Ledger("q1", "vm1"); err != nil || l.Epoch != 0 || len(l.Done) != 0 {
		t.Fatalf("a new host's ledger: %+v, %v; want the zero ledger", l, err)
	}
	want := agent.Ledger{Epoch: 3, Done: []string{"c3-1", "c3-2"}}
	if err := d.SetLedger("q1", "vm1", want); err != nil {
		t.Fatal(err)
	}
	d.Close()
	again, err := New(testConfig(dir, "q1", "q2"))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := again.Ledger("q1", "vm1"); err != nil || got.Epoch != want.Epoch || !slices.Equal(got.Done, want.Done) {
		t.Fatalf("read back by a new driver: %+v, %v; want %+v", got, err, want)
	}
	if got, err := again.Ledger("q2", "vm1"); err != nil || got.Epoch != 0 {
		t.Fatalf("q2 has q1's ledger: %+v, %v", got, err)
	}
	if _, err := again.Ledger("q9", "vm1"); err == nil {
		t.Fatal("a ledger of a host the driver does not serve")
	}
	if err := again.SetLedger("q1", "../x", want); err == nil {
		t.Fatal("SetLedger took a VM id that is a path")
	}
}
