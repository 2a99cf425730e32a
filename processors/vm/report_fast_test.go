package vm

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// TestQuickReportMatchesStep checks that every power report the quick path
// decides gets exactly the state and outputs of the general path, that
// Step leaves the given state unchanged, that StepReusing decides alike in
// the given record exactly when the quick path takes the report, and that
// it takes the reports it is for.
func TestQuickReportMatchesStep(t *testing.T) {
	m := New(DefaultConfig())
	now := time.UnixMilli(5_000_000).UTC()
	base := func(mod func(*schemas.VmRecord)) *schemas.VmRecord {
		s := &schemas.VmRecord{VmID: "vm-1", Name: "vm-1", Account: "a", ZoneID: "z1", VmState: StateActive,
			PowerState: schemas.PowerOn, PowerHost: "h1", HostID: "h1", PodID: "p1", ClusterID: "c1", Epoch: 2,
			PowerStateUpdateCount: 1, PowerStateUpdateTime: 1000, ReportSeq: map[string]int64{"h1": 5, "h0": 9},
			Offering: schemas.Offering{ID: "small", CPU: 1, MemoryMB: 512, HostTags: []string{"ssd"}},
			Recent:   []schemas.RecentJob{{JobID: "j0", State: "succeeded"}}}
		if mod != nil {
			mod(s)
		}
		return s
	}
	states := map[string]*schemas.VmRecord{
		"active":            base(nil),
		"at limit":          base(func(s *schemas.VmRecord) { s.PowerStateUpdateCount = m.cfg.PowerStateUpdateLimit }),
		"below limit":       base(func(s *schemas.VmRecord) { s.PowerStateUpdateCount = m.cfg.PowerStateUpdateLimit - 1 }),
		"saturated":         base(func(s *schemas.VmRecord) { s.PowerStateUpdateCount = math.MaxInt32 }),
		"no sequences":      base(func(s *schemas.VmRecord) { s.ReportSeq = nil }),
		"stopped":           base(func(s *schemas.VmRecord) { s.VmState, s.PowerState = StateStopped, schemas.PowerOff }),
		"stopped, reported": base(func(s *schemas.VmRecord) { s.VmState = StateStopped }),
		"deleted":           base(func(s *schemas.VmRecord) { s.VmState, s.Rare = StateDeleted, &schemas.VmRare{ExpungeAt: 9_000_000} }),
		"job": base(func(s *schemas.VmRecord) {
			s.Job = &schemas.JobState{JobID: "j1", JobType: "Reboot", Deadline: 9_000_000}
		}),
		"other power host": base(func(s *schemas.VmRecord) { s.PowerHost = "h2" }),
		"unplaced":         base(func(s *schemas.VmRecord) { s.HostID = "" }),
		"unsettled":        base(func(s *schemas.VmRecord) { s.Rare = &schemas.VmRare{ReportsAfter: 4_999_500} }),
	}
	reports := map[string]*schemas.PowerReport{
		"same":           {VmID: "vm-1", HostID: "h1", PowerState: schemas.PowerOn, ReportSeq: 6, ReportedAt: 4_999_000},
		"same, off":      {VmID: "vm-1", HostID: "h1", PowerState: schemas.PowerOff, ReportSeq: 6},
		"stale":          {VmID: "vm-1", HostID: "h1", PowerState: schemas.PowerOff, ReportSeq: 5},
		"older":          {VmID: "vm-1", HostID: "h1", PowerState: schemas.PowerOn, ReportSeq: 1},
		"other host":     {VmID: "vm-1", HostID: "h2", PowerState: schemas.PowerOn, ReportSeq: 1},
		"other host off": {VmID: "vm-1", HostID: "h2", PowerState: schemas.PowerOff, ReportSeq: 1},
		"unknown":        {VmID: "vm-1", HostID: "h1", PowerState: schemas.PowerUnknown, ReportSeq: 7},
	}
	quick := 0
	for sn, s := range states {
		for rn, r := range reports {
			before := clone(s)
			in := schemas.Record{Topic: schemas.TopicVmPower, Key: "vm-1", Value: r}
			_, _, isQuick := m.quickReport(s, in.Key, r, now, false)
			if isQuick {
				quick++
			}
			gotS, gotOut := m.Step(s, in, now)
			wantS, wantOut := m.step(s, in, now)
			if !reflect.DeepEqual(gotS, wantS) {
				t.Errorf("%s / %s: state\n got %+v\nwant %+v", sn, rn, gotS, wantS)
			}
			if !reflect.DeepEqual(gotOut, wantOut) {
				t.Errorf("%s / %s: outputs\n got %+v\nwant %+v", sn, rn, gotOut, wantOut)
			}
			if !reflect.DeepEqual(s, before) {
				t.Errorf("%s / %s: the given state was modified", sn, rn)
			}
			// The runtime's StepReusing decides alike, in the record it
			// gives up when the quick path takes the report.
			given := clone(s)
			reusedS, reusedOut := m.StepReusing(given, in, now)
			if !reflect.DeepEqual(reusedS, wantS) || !reflect.DeepEqual(reusedOut, wantOut) {
				t.Errorf("%s / %s: StepReusing\n got %+v %+v\nwant %+v %+v", sn, rn, reusedS, reusedOut, wantS, wantOut)
			}
			if reused := reusedS == given; reused != isQuick {
				t.Errorf("%s / %s: StepReusing returned the given record: %v; the quick path took the report: %v", sn, rn, reused, isQuick)
			}
		}
	}
	// Stale and older on every state with h1's sequence, same on the
	// consistent placed states.
	if quick < 20 {
		t.Errorf("the quick path decided %d reports; it is not taken", quick)
	}
}

// TestSharedReportSeq checks that the VMs of a host share one sequence map
// per round, and that no later step of one of them writes into it.
func TestSharedReportSeq(t *testing.T) {
	m := New(DefaultConfig())
	now := time.UnixMilli(5_000_000).UTC()
	vm := func(id string) *schemas.VmRecord {
		return &schemas.VmRecord{VmID: id, VmState: StateActive, PowerState: schemas.PowerOn, PowerHost: "h1",
			HostID: "h1", PowerStateUpdateCount: 1, ReportSeq: map[string]int64{"h1": 5}}
	}
	report := func(s *schemas.VmRecord, host, power string, seq int64) *schemas.VmRecord {
		next, _ := m.Step(s, schemas.Record{Topic: schemas.TopicVmPower, Key: s.VmID,
			Value: &schemas.PowerReport{VmID: s.VmID, HostID: host, PowerState: power, ReportSeq: seq}}, now)
		return next
	}
	a, b := report(vm("a"), "h1", schemas.PowerOn, 6), report(vm("b"), "h1", schemas.PowerOn, 6)
	if reflect.ValueOf(a.ReportSeq).UnsafePointer() != reflect.ValueOf(b.ReportSeq).UnsafePointer() {
		t.Errorf("the VMs of h1 do not share round 6's map")
	}
	// Every kind of step from a state that shares the map: none may write
	// into it.
	for _, step := range []struct {
		host, power string
		seq         int64
	}{
		{"h1", schemas.PowerOn, 7},  // quick path, next round
		{"h1", schemas.PowerOn, 3},  // stale
		{"h2", schemas.PowerOn, 1},  // moved: general path
		{"h1", schemas.PowerOff, 8}, // general path on its host
		{"h2", schemas.PowerOff, 2}, // general path, another host
	} {
		report(a, step.host, step.power, step.seq)
		if !reflect.DeepEqual(b.ReportSeq, map[string]int64{"h1": 6}) {
			t.Fatalf("after %+v the shared map is %v", step, b.ReportSeq)
		}
	}
}
