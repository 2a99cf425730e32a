package host

import (
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// TestCurrentByTheNewestInput: a machine is current when the newest input
// it has read was written within the slack; one agent whose records look
// late (its clock behind, or pings it buffered) does not make it a
// backlog reader while others' records are fresh; a backlog does.
func TestCurrentByTheNewestInput(t *testing.T) {
	cfg := DefaultConfig()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) schemas.Record { return schemas.Record{TimestampMs: now.Add(d).UnixMilli()} }
	m := New(cfg)
	if m.current {
		t.Fatal("current before any input")
	}
	m.observe(at(-2*cfg.TickSlack), now) // a backlog's record
	if m.current {
		t.Fatal("current while reading a record written two slacks ago")
	}
	m.observe(at(-time.Second), now)
	if !m.current {
		t.Fatal("not current after a fresh record")
	}
	m.observe(at(-10*cfg.TickSlack), now) // an agent whose clock is behind
	if !m.current {
		t.Fatal("one late-looking record made the machine a backlog reader")
	}
}
