package gateway

import (
	"log/slog"
	"strconv"
	"testing"

	"github.com/vmplane/vmplane/api"
)

// A stream that keeps up never overflows, however many events pass; one
// more than maxQueued behind gets every queued event, then is dropped.
func TestSubscriptionQueue(t *testing.T) {
	f := NewFanout(slog.New(slog.DiscardHandler), 16)
	ev := func(i int) Event {
		return Event{Event: api.Event{ID: "0:" + strconv.Itoa(i), Type: "JobStepped", VmID: "vm1"}, Account: "acme", partition: 0, offset: int64(i)}
	}
	all := func(Event) bool { return true }

	keeping, _, _, _ := f.Subscribe(t.Context(), all, "")
	var got []Event
	for i := range 3 * maxQueued {
		f.Publish(ev(i))
		if i%100 == 99 {
			var behind bool
			if got, behind = keeping.take(got); behind || len(got) != 100 {
				t.Fatalf("after %d events: took %d, behind %v; want 100, false", i+1, len(got), behind)
			}
		}
	}
	keeping.Close()

	slow, _, _, _ := f.Subscribe(t.Context(), all, "")
	for i := range maxQueued + 10 {
		f.Publish(ev(i))
	}
	got, behind := slow.take(nil)
	if !behind || len(got) != maxQueued || got[0].ID != "0:0" || got[maxQueued-1].ID != "0:"+strconv.Itoa(maxQueued-1) {
		t.Fatalf("slow stream: %d events (%v..), behind %v; want %d from 0:0, behind", len(got), got[0].ID, behind, maxQueued)
	}
	f.Publish(ev(maxQueued + 10))
	if got, _ = slow.take(got); len(got) != 0 {
		t.Fatalf("a dropped stream still receives events: %v", got)
	}
}
