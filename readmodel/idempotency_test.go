package readmodel

import (
	"bytes"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestIdempotencyStore: two stores on one database (two gateway
// instances, or one before and after a restart) share every key.
func TestIdempotencyStore(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	ctx := t.Context()
	dsn := migratedDB(t)
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

	// Callers are API keys within their account, as the gateway passes them.
	const acme, bolt = "acme/0123456789ab", "bolt/ba9876543210"
	first, claimed, err := a.Claim(ctx, acme, "k1", fp, now, ttl, stale)
	if err != nil || !claimed {
		t.Fatalf("first claim: %v %v", claimed, err)
	}
	// In flight on a: b sees the claim, not a second one.
	got, claimed, err := b.Claim(ctx, acme, "k1", fp, now.Add(time.Second), ttl, stale)
	if err != nil || claimed || got.Status != 0 {
		t.Fatalf("b during flight: %+v %v %v", got, claimed, err)
	}
	if err := a.Complete(ctx, acme, "k1", first.Token, 202, "/v1/jobs/j1", []byte(`{"id":"j1"}`)); err != nil {
		t.Fatal(err)
	}
	got, claimed, err = b.Claim(ctx, acme, "k1", fp, now.Add(2*time.Second), ttl, stale)
	if err != nil || claimed || got.Status != 202 || got.Location != "/v1/jobs/j1" || !bytes.Equal(got.Body, []byte(`{"id":"j1"}`)) {
		t.Fatalf("b after completion: %+v %v %v", got, claimed, err)
	}
	// Another body with the key: the stored fingerprint tells.
	if got, claimed, _ := b.Claim(ctx, acme, "k1", other, now, ttl, stale); claimed || bytes.Equal(got.Fingerprint, other) {
		t.Fatal("a different request took the key")
	}
	// Keys are per caller; an expired entry is claimed anew.
	if _, claimed, _ := b.Claim(ctx, bolt, "k1", other, now, ttl, stale); !claimed {
		t.Fatal("another account's key was taken")
	}
	if _, claimed, _ := b.Claim(ctx, acme, "k1", other, now.Add(ttl+time.Hour), ttl, stale); !claimed {
		t.Fatal("an expired key was not reclaimed")
	}
	// A released claim frees the key; a stale one is taken over by the
	// same request only.
	c, _, _ := a.Claim(ctx, acme, "k2", fp, now, ttl, stale)
	if err := a.Release(ctx, acme, "k2", c.Token); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _ := b.Claim(ctx, acme, "k2", fp, now, ttl, stale); !claimed {
		t.Fatal("a released key stayed claimed")
	}
	if _, claimed, _ := a.Claim(ctx, acme, "k2", other, now.Add(2*stale), ttl, stale); claimed {
		t.Fatal("a stale claim was taken over by another request")
	}
	if _, claimed, _ := a.Claim(ctx, acme, "k2", fp, now.Add(2*stale), ttl, stale); !claimed {
		t.Fatal("a stale claim was not taken over")
	}

	// Sweep drops what is older than ttl, and every entry kept per account
	// by earlier versions (no "/" in the caller: the answer of a key's
	// creation was kept with the key), which nothing can replay any more.
	legacy, _, _ := a.Claim(ctx, "acme", "k3", fp, now, ttl, stale)
	if err := a.Complete(ctx, "acme", "k3", legacy.Token, 201, "", []byte(`{"key":"vmp_secret"}`)); err != nil {
		t.Fatal(err)
	}
	fresh, _, _ := a.Claim(ctx, acme, "k4", fp, now.Add(ttl), ttl, stale)
	if err := a.Sweep(ctx, now.Add(ttl+3*time.Minute), ttl); err != nil {
		t.Fatal(err)
	}
	rows, err := a.pool.Query(ctx, `SELECT account || ' ' || key FROM idempotency_keys ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(left) != 2 || left[0] != acme+" k1" || left[1] != acme+" k4" || fresh.Token == "" {
		t.Fatalf("after the sweep: %v (%v)", left, err)
	}
}
