package readmodel

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestAcceptedStore: two stores on one database (two gateway instances,
// or one before and after a restart) see each other's rows; the first row
// of an id is kept; a body holding what jsonb would refuse (\u0000) comes
// back as stored; a sweep takes only rows older than its ttl.
func TestAcceptedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	ctx := t.Context()
	dsn := migratedDB(t)
	a, err := NewAccepted(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewAccepted(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var sync string
	if err := a.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sync); err != nil || sync != "off" {
		t.Fatalf("synchronous_commit = %q (%v), want off: a POST waits for no WAL flush", sync, err)
	}
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	vm := AcceptedRow{Kind: AcceptedVM, ID: "vm-1", Account: "acme", Body: []byte(`{"Name":"web\u0000"}`), At: now}
	job := AcceptedRow{Kind: AcceptedJob, ID: "vm-1", Account: "acme", Body: []byte(`{"id":"vm-1"}`), At: now.Add(-2 * time.Hour)}
	if err := a.Put(ctx, vm, job); err != nil {
		t.Fatal(err)
	}
	again := vm
	again.Account, again.Body = "bolt", []byte(`{}`)
	if err := b.Put(ctx, again); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, AcceptedVM, "vm-1")
	if err != nil || got.Account != "acme" || !bytes.Equal(got.Body, vm.Body) || !got.At.Equal(now) {
		t.Fatalf("vm-1 from the other store: %+v (%v)", got, err)
	}
	if got, err := b.Get(ctx, AcceptedJob, "vm-1"); err != nil || got.Kind != AcceptedJob || !bytes.Equal(got.Body, job.Body) {
		t.Fatalf("job vm-1: %+v (%v)", got, err)
	}
	if _, err := b.Get(ctx, AcceptedLease, "vm-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a kind never accepted: %v", err)
	}
	if err := b.Sweep(ctx, now, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, AcceptedJob, "vm-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("swept job: %v", err)
	}
	if _, err := a.Get(ctx, AcceptedVM, "vm-1"); err != nil {
		t.Fatalf("the VM within the ttl: %v", err)
	}
}
