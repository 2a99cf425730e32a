package qemu

import (
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// TestCheckAndFence runs a guest on each host, fences q1 and checks that
// only q1's guest is dead and that the checks say what they can see.
func TestCheckAndFence(t *testing.T) {
	d := newDriver(t)
	ctx := t.Context()
	for _, s := range []struct{ host, vm string }{{"q1", "f1"}, {"q2", "f2"}} {
		if err := d.Start(ctx, s.host, agent.VMSpec{ID: s.vm, MemoryMB: 64}); err != nil {
			t.Fatal(err)
		}
	}
	checks := []struct {
		name, from, target, method string
		vms                        []string
		want                       string
	}{
		{"neighbour of ours", "q2", "q1", "neighbour", nil, "Up"},
		{"host not ours", "q2", "elsewhere", "neighbour", nil, "Unknown"},
		{"live guest", "q2", "q1", "vm-activity", []string{"f1"}, "Up"},
		{"guest of another host", "q2", "q1", "vm-activity", []string{"f2"}, "Unknown"},
		{"unknown method", "q2", "q1", "ping", nil, "Unknown"},
	}
	for _, c := range checks {
		got, detail, err := d.CheckHost(ctx, c.from, c.target, c.method, c.vms)
		if err != nil || got != c.want {
			t.Errorf("%s: %s (%s) %v, want %s", c.name, got, detail, err, c.want)
		}
	}
	before := time.Now().UnixMilli()
	if err := d.Fence(ctx, "q2", "q1"); err != nil {
		t.Fatal(err)
	}
	// Commands issued before the fencing are void on q1 (agent.Driver.
	// UpSince); q2 was never down.
	if up, err := d.UpSince("q1"); err != nil || up < before {
		t.Fatalf("q1 up since %d (%v), want at least %d", up, err, before)
	}
	if up, err := d.UpSince("q2"); err != nil || up != 0 {
		t.Fatalf("q2 up since %d (%v), want 0", up, err)
	}
	expect(t, d, "q1", "f1", schemas.PowerOff)
	expect(t, d, "q2", "f2", schemas.PowerOn)
	if got, _, _ := d.CheckHost(ctx, "q2", "q1", "vm-activity", []string{"f1"}); got != "Unknown" {
		t.Fatalf("vm-activity after fencing: %s", got)
	}
	if err := d.Fence(ctx, "q2", "q1"); err != nil {
		t.Fatalf("fencing a fenced host again: %v", err)
	}
	if err := d.Fence(ctx, "q2", "nope"); err == nil {
		t.Fatal("fencing a host not ours succeeded")
	}
}

// A VM id arrives in a Kafka record and becomes a directory name, a QEMU
// option value and part of a shell command: only plain names pass.
func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"vm-3a791e85-26b4-419f-9204-0441775489fe": true,
		"web_1.a:b":                     true,
		"":                              false,
		".":                             false,
		"..":                            false,
		"-x":                            false,
		"a/b":                           false,
		"a,b":                           false,
		"x;curl":                        false,
		"$(id)":                         false,
		"a b":                           false,
		"a\x00b":                        false,
		strings.Repeat("a", maxIDLen+1): false,
	} {
		if got := validID(id); got != want {
			t.Errorf("validID(%q) = %v, want %v", id, got, want)
		}
	}
}
