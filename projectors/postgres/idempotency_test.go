package postgres

import (
	"bytes"
	"testing"
	"time"
)

// TestIdempotencyStore: two stores on one database (two gateway
// instances, or one before and after a restart) share every key.
func TestIdempotencyStore(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	ctx := t.Context()
	dsn := testDB(t)
	if err := Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	a, err := NewIdempotency(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewIdempotency(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	ttl, stale := 24*time.Hour, time.Minute
	fp, other := []byte("fp-1"), []byte("fp-2")

	first, claimed, err := a.Claim(ctx, "acme", "k1", fp, now, ttl, stale)
	if err != nil || !claimed {
		t.Fatalf("first claim: %v %v", claimed, err)
	}
	// In flight on a: b sees the claim, not a second one.
	got, claimed, err := b.Claim(ctx, "acme", "k1", fp, now.Add(time.Second), ttl, stale)
	if err != nil || claimed || got.Status != 0 {
		t.Fatalf("b during flight: %+v %v %v", got, claimed, err)
	}
	if err := a.Complete(ctx, "acme", "k1", first.Token, 202, "/v1/jobs/j1", []byte(`{"id":"j1"}`)); err != nil {
		t.Fatal(err)
	}
	got, claimed, err = b.Claim(ctx, "acme", "k1", fp, now.Add(2*time.Second), ttl, stale)
	if err != nil || claimed || got.Status != 202 || got.Location != "/v1/jobs/j1" || !bytes.Equal(got.Body, []byte(`{"id":"j1"}`)) {
		t.Fatalf("b after completion: %+v %v %v", got, claimed, err)
	}
	// Another body with the key: the stored fingerprint tells.
	if got, claimed, _ := b.Claim(ctx, "acme", "k1", other, now, ttl, stale); claimed || bytes.Equal(got.Fingerprint, other) {
		t.Fatal("a different request took the key")
	}
	// Keys are per account; an expired entry is claimed anew.
	if _, claimed, _ := b.Claim(ctx, "bolt", "k1", other, now, ttl, stale); !claimed {
		t.Fatal("another account's key was taken")
	}
	if _, claimed, _ := b.Claim(ctx, "acme", "k1", other, now.Add(ttl+time.Hour), ttl, stale); !claimed {
		t.Fatal("an expired key was not reclaimed")
	}
	// A released claim frees the key; a stale one is taken over by the
	// same request only.
	c, _, _ := a.Claim(ctx, "acme", "k2", fp, now, ttl, stale)
	if err := a.Release(ctx, "acme", "k2", c.Token); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _ := b.Claim(ctx, "acme", "k2", fp, now, ttl, stale); !claimed {
		t.Fatal("a released key stayed claimed")
	}
	if _, claimed, _ := a.Claim(ctx, "acme", "k2", other, now.Add(2*stale), ttl, stale); claimed {
		t.Fatal("a stale claim was taken over by another request")
	}
	if _, claimed, _ := a.Claim(ctx, "acme", "k2", fp, now.Add(2*stale), ttl, stale); !claimed {
		t.Fatal("a stale claim was not taken over")
	}
}
