package storm

import (
	"testing"
	"time"
)

func TestStagesMatchRecordsToActions(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rt := &recordTimes{
		command: map[string]time.Time{"j1": at(1), "j2": at(2001), "j3": at(3001)},
		agent:   map[string]time.Time{"j1": at(3), "j2": at(2004), "j3": at(3002)},
		// vm-1 was rebooted twice: each action takes the answer and final
		// event after its own agent command.
		answer: map[string][]time.Time{"vm-1": {at(4), at(2008)}},
		final:  map[string][]time.Time{"vm-1": {at(6), at(2011)}},
	}
	st := rt.stages([]done{
		{job: "j1", vm: "vm-1", sent: at(0), took: 10 * time.Millisecond},
		{job: "j2", vm: "vm-1", sent: at(2000), took: 20 * time.Millisecond},
		{job: "j3", vm: "vm-2", sent: at(3000), took: 5 * time.Millisecond}, // no answer: left out
	})
	want := [][]int{{1, 1}, {2, 3}, {1, 4}, {2, 3}, {4, 9}}
	for i := range stageNames {
		if len(st[i]) != 2 || st[i][0] != time.Duration(want[i][0])*time.Millisecond || st[i][1] != time.Duration(want[i][1])*time.Millisecond {
			t.Fatalf("stage %q = %v, want %v ms", stageNames[i], st[i], want[i])
		}
	}
	if (stageTimes{}).String() != "no stages (records not found)" {
		t.Fatal("an empty split says nothing about it")
	}
}
