package host

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// TestScenarioAgentLife plays an agent's life the way the runtime drives the
// machine: records at their times, and a Tick whenever Wake falls due. The
// agent connects with two VMs, pings every minute, loses vm2, goes silent
// for five minutes and comes back.
func TestScenarioAgentLife(t *testing.T) {
	inputs := map[time.Duration]any{0: hello("vm1", "vm2")}
	for i := 1; i <= 4; i++ {
		vms := []string{"vm1", "vm2"}
		if i >= 2 {
			vms = vms[:1] // vm2 vanished after the first minute
		}
		inputs[time.Duration(i)*time.Minute] = pingOf(int64(i), vms...)
	}
	// Silence from 4 min to 9 min, then pings again.
	inputs[9*time.Minute] = pingOf(9, "vm1")
	inputs[10*time.Minute] = pingOf(10, "vm1")

	want := []string{
		"0s host.status.v1 h1 Connecting reservable=false (agent connected; waiting for its first report round)",
		"1m0s host.status.v1 h1 Up reservable=true (ping)", // the first ping ends the first round
		"4m0s vm.signals.v1 VmMissingFromHost vm2 last=1m0s seq=4",
		"6m30s host.status.v1 h1 Disconnected reservable=false (ping timeout)",
		"6m30s vm.events.v1 *schemas.AlertRaised",    // HostDisconnected
		"6m30s agent.commands.v1 *schemas.CheckHost", // neighbour: no answer
		"7m0s agent.commands.v1 *schemas.CheckHost",  // vm-activity: no answer
		"7m30s agent.commands.v1 *schemas.FenceHost", // fence: no answer, so not Down
		"7m30s vm.events.v1 *schemas.AlertRaised",    // HostFencing
		"9m0s host.status.v1 h1 Up reservable=true (ping)",
	}

	m := New(DefaultConfig())
	var r *schemas.HostRecord
	var got []string
	log := func(at time.Duration, out []schemas.Record) {
		for _, o := range out {
			switch v := o.Value.(type) {
			case *schemas.HostStatus:
				if o.Topic == schemas.TopicHostStatus {
					got = append(got, fmt.Sprintf("%v %s %s %s reservable=%v (%s)", at, o.Topic, v.HostID, v.Status, v.Reservable, v.Reason))
				}
			case *schemas.VmMissingFromHost:
				got = append(got, fmt.Sprintf("%v %s VmMissingFromHost %s last=%v seq=%d", at, o.Topic, v.VmID,
					time.UnixMilli(v.LastSeenAt).Sub(t0), v.ReportSeq))
			default:
				got = append(got, fmt.Sprintf("%v %s %T", at, o.Topic, v))
			}
		}
	}
	for at := time.Duration(0); at <= 12*time.Minute; at += time.Second {
		now := t0.Add(at)
		if w := m.Wake(r); !w.IsZero() && !now.Before(w) {
			var out []schemas.Record
			r, out = m.Tick(r, "h1", now)
			log(at, out)
		}
		if v, ok := inputs[at]; ok {
			var out []schemas.Record
			r, out = m.Step(r, rec(v), now)
			log(at, out)
		}
		roundTrip(t, r)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scenario:\n got %q\nwant %q", got, want)
	}
}
