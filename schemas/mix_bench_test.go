package schemas

import (
	"testing"
)

// decodeMix is what the hot consumers decode (and the VM processor encodes)
// most: the read model's events
// (a rebuild replays them), the agents' power reports and the VM
// processor's changelog records (an idle VM and one with a job in flight),
// with values shaped like the ones the system writes.
func decodeMix() []struct {
	name string
	v    any
} {
	const at = int64(1_763_800_000_000)
	small := Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 512}
	ref := JobRef{JobID: "job-000123456", VmID: "vm-000123456", Account: "acme", JobType: "Deploy", Origin: OriginAPI, At: at}
	idle := VmRecord{VmID: "vm-000123456", Name: "web-123456", Account: "acme", ZoneID: "zone-1", Offering: small,
		VmState: "Active", PowerState: PowerOn, PowerHost: "host-p1-c2-h17", PowerStateUpdateTime: at, PowerStateUpdateCount: 3,
		HostID: "host-p1-c2-h17", PodID: "p1", ClusterID: "p1-c2", Epoch: 4,
		Recent:    []RecentJob{{JobID: "job-000123456", State: "succeeded"}},
		ReportSeq: map[string]int64{"host-p1-c2-h17": 1 << 33}, CreatedAt: at, UpdatedAt: at + 30}
	busy := idle
	busy.Rare = &VmRare{TaskState: "Rebooting"}
	busy.Job = &JobState{JobID: "job-000999", JobType: "Reboot", Origin: OriginAPI, Account: "acme", Phase: "answer", Seq: 2,
		StartedAt: at, Deadline: at + 60_000, LastStepAt: at + 10,
		Wait: JobWait{Kind: "Answer", RequestID: "cmd-000999-1", HostID: "host-p1-c2-h17", Deadline: at + 30_000}}
	return []struct {
		name string
		v    any
	}{
		{"VmStateChanged", &VmStateChanged{VmID: ref.VmID, Name: "web-123456", Account: "acme", ZoneID: "zone-1", Offering: small,
			VmState: "Active", PowerState: PowerOn, HostID: "host-p1-c2-h17", Epoch: 1, JobID: ref.JobID,
			AllowedActions: []string{"stop", "reboot", "terminate"}, CreatedAt: at, UpdatedAt: at + 30}},
		{"JobAccepted", &JobAccepted{JobRef: ref}},
		{"JobStepped", &JobStepped{JobRef: ref, Seq: 2, TaskState: "Spawning", Step: "spawn", Text: "starting", Obj: `{"host_id":"host-p1-c2-h17"}`}},
		{"JobSucceeded", &JobSucceeded{JobRef: ref, VmState: "Active"}},
		{"PowerReport", &PowerReport{VmID: ref.VmID, HostID: "host-p1-c2-h17", PowerState: PowerOn, ReportSeq: 1 << 33, ReportedAt: at}},
		{"VmRecord/idle", &idle},
		{"VmRecord/job", &busy},
	}
}

// BenchmarkDecode decodes each record of decodeMix, and the whole mix as
// one op.
func BenchmarkDecode(b *testing.B) {
	mix := decodeMix()
	bufs := make([][]byte, len(mix))
	for i, m := range mix {
		buf, err := Marshal(m.v)
		if err != nil {
			b.Fatal(err)
		}
		bufs[i] = buf
	}
	for i, m := range mix {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Unmarshal(bufs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("mix", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, buf := range bufs {
				if _, err := Unmarshal(buf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkEncode encodes each record of decodeMix, and the whole mix as
// one op, into a reused buffer (as AppendEncode does).
func BenchmarkEncode(b *testing.B) {
	for _, m := range append(decodeMix(), struct {
		name string
		v    any
	}{"mix", nil}) {
		b.Run(m.name, func(b *testing.B) {
			vs := []any{m.v}
			if m.v == nil {
				vs = nil
				for _, m := range decodeMix() {
					vs = append(vs, m.v)
				}
			}
			c, buf := NewCodec(nil), []byte(nil)
			b.ReportAllocs()
			for b.Loop() {
				buf = buf[:0]
				for _, v := range vs {
					var err error
					if buf, err = c.AppendEncode(b.Context(), buf, v); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
