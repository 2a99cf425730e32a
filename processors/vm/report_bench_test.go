package vm

import (
	"fmt"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// benchFleet is the running VMs of a few hosts as a storm holds 500,000
// of: each placed on its host, which is the only one in its report
// sequences, with a finished job remembered.
func benchFleet(hosts, perHost int) []*schemas.VmRecord {
	var vms []*schemas.VmRecord
	for h := range hosts {
		host := fmt.Sprintf("host-p1-c1-h%d", h)
		for v := range perHost {
			id := fmt.Sprintf("vm-%08d", h*perHost+v)
			vms = append(vms, &schemas.VmRecord{VmID: id, Name: id, Account: "acct-0001", ZoneID: "z1",
				VmState: StateActive, PowerState: schemas.PowerOn, PowerHost: host, HostID: host,
				PodID: "p1", ClusterID: "c1", Epoch: 1, PowerStateUpdateCount: 1, PowerStateUpdateTime: 1000,
				ReportSeq: map[string]int64{host: 1},
				Offering:  schemas.Offering{ID: "small", CPU: 2, MemoryMB: 2048, HostTags: []string{"ssd"}},
				Recent:    []schemas.RecentJob{{JobID: "d1", State: "succeeded"}}, CreatedAt: 1000, UpdatedAt: 1000})
		}
	}
	return vms
}

// benchReports steps, per op, one VM's report of a round, host by host as
// the agent sends them, carrying each state on as the runtime does; a round
// ends when every VM has reported. The update count passes the limit in
// the first rounds, so it is the steady state (no output) that is measured.
func benchReports(b *testing.B, hosts, perHost int, reuse bool) {
	m := New(DefaultConfig())
	step := m.Step
	if reuse {
		step = m.StepReusing
	}
	vms := benchFleet(hosts, perHost)
	now := time.UnixMilli(5_000_000).UTC()
	r := &schemas.PowerReport{PowerState: schemas.PowerOn, ReportSeq: 1}
	in := schemas.Record{Topic: schemas.TopicVmPower, Value: r}
	i := 0
	for b.Loop() {
		if i == 0 {
			r.ReportSeq++
		}
		s := vms[i]
		r.VmID, r.HostID, in.Key = s.VmID, s.HostID, s.VmID
		vms[i], _ = step(s, in, now)
		i = (i + 1) % len(vms)
	}
	for _, s := range vms {
		if s.ReportSeq[s.HostID] < r.ReportSeq-1 || s.StaleIgnored != 0 {
			b.Fatalf("%s: sequences %v after round %d", s.VmID, s.ReportSeq, r.ReportSeq)
		}
	}
}

// BenchmarkSameStateReport is the report a running VM's host sends every
// round: same power state, the host's next sequence; 50 VMs a host, and
// one VM a host, where no other VM shares the host's round. The pure Step
// copies the record; the runtime's StepReusing changes it.
func BenchmarkSameStateReport(b *testing.B) {
	for _, reuse := range []bool{false, true} {
		name := map[bool]string{false: "Step", true: "StepReusing"}[reuse]
		b.Run("50-per-host/"+name, func(b *testing.B) { benchReports(b, 20, 50, reuse) })
		b.Run("1-per-host/"+name, func(b *testing.B) { benchReports(b, 1000, 1, reuse) })
	}
}

// BenchmarkStaleReport steps a report older than the last one seen from
// its host, as a reconnecting agent replays.
func BenchmarkStaleReport(b *testing.B) {
	m := New(DefaultConfig())
	s := benchFleet(1, 1)[0]
	s.ReportSeq = map[string]int64{s.HostID: 1 << 40}
	now := time.UnixMilli(5_000_000).UTC()
	in := schemas.Record{Topic: schemas.TopicVmPower, Key: s.VmID,
		Value: &schemas.PowerReport{VmID: s.VmID, HostID: s.HostID, PowerState: schemas.PowerOff, ReportSeq: 7}}
	for b.Loop() {
		s, _ = m.Step(s, in, now)
	}
	if s.StaleIgnored == 0 {
		b.Fatal("the report was not ignored as stale")
	}
}
