package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vmplane/vmplane/readmodel"
)

func TestKeyCache(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	reads := 0
	rows := map[string]readmodel.APIKey{"k1": {KeyID: "k1", AccountID: "a"}}
	read := func(_ context.Context, id string) (readmodel.APIKey, error) {
		reads++
		row, ok := rows[id]
		if !ok {
			return row, readmodel.ErrNotFound
		}
		return row, nil
	}
	c := newKeyCache(time.Second, 2)
	get := func(id string, at time.Duration) (readmodel.APIKey, error) {
		return c.get(t.Context(), id, t0.Add(at), read)
	}
	steps := []struct {
		name      string
		id        string
		at        time.Duration
		wantReads int
		wantErr   bool
		before    func()
	}{
		{name: "first use reads", id: "k1", wantReads: 1},
		{name: "within the ttl from the cache", id: "k1", at: 999 * time.Millisecond, wantReads: 1},
		{name: "at the ttl read again", id: "k1", at: time.Second, wantReads: 2},
		{name: "a clock gone back reads again", id: "k1", at: -time.Second, wantReads: 3},
		{name: "unknown key read", id: "k2", at: time.Second, wantReads: 4, wantErr: true},
		{name: "unknown key within the ttl from the cache", id: "k2", at: 1500 * time.Millisecond, wantReads: 4, wantErr: true},
		{name: "unknown key at the ttl read again", id: "k2", at: 2 * time.Second, wantReads: 5, wantErr: true},
		{name: "a key issued after it was unknown, seen after forget", id: "k2", at: 2 * time.Second, wantReads: 6,
			before: func() { rows["k2"] = readmodel.APIKey{KeyID: "k2"}; c.forget("k2") }},
		{name: "a revocation seen after forget", id: "k1", at: time.Second, wantReads: 7,
			before: func() { rows["k1"] = readmodel.APIKey{KeyID: "k1", Revoked: true}; c.forget("k1") }},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		row, err := get(s.id, s.at)
		if (err != nil) != s.wantErr || reads != s.wantReads {
			t.Fatalf("%s: err %v, %d reads; want error %v, %d reads", s.name, err, reads, s.wantErr, s.wantReads)
		}
		if s.id == "k1" && row.Revoked != rows["k1"].Revoked {
			t.Fatalf("%s: revoked %v, the read model says %v", s.name, row.Revoked, rows["k1"].Revoked)
		}
	}
	// Bounded: past max, expired rows go, then everything.
	rows["k3"], rows["k4"] = readmodel.APIKey{KeyID: "k3"}, readmodel.APIKey{KeyID: "k4"}
	for _, id := range []string{"k3", "k4"} {
		if _, err := get(id, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.rows) > 2 {
		t.Fatalf("%d rows kept, max 2", len(c.rows))
	}
	// Unknown keys are bounded apart: a flood of made-up keys never pushes
	// a known key out.
	c = newKeyCache(time.Second, 2)
	if _, err := get("k1", 0); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := get(fmt.Sprintf("made-up-%d", i), 0); err == nil {
			t.Fatal("a made-up key was found")
		}
	}
	if len(c.unknown) > 2 || !c.seen("k1", t0) {
		t.Fatalf("%d unknown kept (max 2), k1 seen %v", len(c.unknown), c.seen("k1", t0))
	}
	off := newKeyCache(-1, 10)
	for range 3 {
		if _, err := off.get(t.Context(), "k3", t0, read); err != nil {
			t.Fatal(err)
		}
	}
	if len(off.rows) != 0 || len(off.unknown) != 0 {
		t.Fatal("a cache with a negative ttl keeps rows")
	}
}
