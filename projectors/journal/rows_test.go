package journal

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

func TestRowsOf(t *testing.T) {
	ref := schemas.JobRef{JobID: "j1", VmID: "vm1", Account: "acme", JobType: "Start", Origin: "api", At: 1_700_000_000_123}
	caller := schemas.Caller{Account: "ops", KeyID: "k9", RequestID: "req-1"}
	tests := []struct {
		name    string
		value   any
		key     string
		job     *jobRow // only the fields compared below
		ev      eventRow
		wantErr string
	}{
		{name: "accepted", value: &schemas.JobAccepted{JobRef: ref, Queued: true, Position: 2, Caller: caller},
			job: &jobRow{Kind: KindAccepted, Seq: 0, Text: "queued at position 2", Obj: `{"position":2,"queued":true}`, Caller: caller},
			ev:  eventRow{VmID: "vm1", Type: "JobAccepted", JobID: "j1", AtMs: ref.At}},
		{name: "stepped", value: &schemas.JobStepped{JobRef: ref, Seq: 3, TaskState: "Spawning", Step: "start", Text: "starting on h1", Obj: `{"host_id":"h1"}`},
			job: &jobRow{Kind: KindStepped, Seq: 3, Step: "start", TaskState: "Spawning", Text: "starting on h1", Obj: `{"host_id":"h1"}`, HostID: "h1"},
			ev:  eventRow{VmID: "vm1", Type: "JobStepped", JobID: "j1", AtMs: ref.At, TaskState: "Spawning", HostID: "h1", Reason: "starting on h1"}},
		{name: "step zero is poison", value: &schemas.JobStepped{JobRef: ref, Seq: 0}, wantErr: "step seq 0"},
		{name: "succeeded", value: &schemas.JobSucceeded{JobRef: ref, VmState: "Running", StartedAt: ref.At - 300},
			job: &jobRow{Kind: KindSucceeded, Seq: endSeq, VmState: "Running", Text: "succeeded, VM is Running", StartedMs: ref.At - 300},
			ev:  eventRow{VmID: "vm1", Type: "JobSucceeded", JobID: "j1", AtMs: ref.At, VmState: "Running"}},
		{name: "failed", value: &schemas.JobFailed{JobRef: ref, Reason: "Timeout", Detail: "no answer", VmState: "Stopped", StartedAt: ref.At - 60_000},
			job: &jobRow{Kind: KindFailed, Seq: endSeq, Reason: "Timeout", Detail: "no answer", VmState: "Stopped", Text: "no answer", StartedMs: ref.At - 60_000,
				ErrorCode: "Timeout"},
			ev: eventRow{VmID: "vm1", Type: "JobFailed", JobID: "j1", AtMs: ref.At, VmState: "Stopped", Reason: "Timeout"}},
		{name: "cancelled", value: &schemas.JobCancelled{JobRef: ref, Reason: "Cancelled by terminate job j2", VmState: "Stopped", StartedAt: ref.At},
			job: &jobRow{Kind: KindCancelled, Seq: endSeq, Reason: "Cancelled by terminate job j2", VmState: "Stopped", Text: "Cancelled by terminate job j2", StartedMs: ref.At,
				ErrorCode: "Cancelled"},
			ev: eventRow{VmID: "vm1", Type: "JobCancelled", JobID: "j1", AtMs: ref.At, VmState: "Stopped", Reason: "Cancelled by terminate job j2"}},
		{name: "cancelled by a caller", value: &schemas.JobCancelled{JobRef: ref, Reason: "Cancelled by key k1 of account acme", VmState: "Active", StartedAt: ref.At - 5,
			By: "key k1 of account acme", Step: 2, TaskState: "Migrating", Detail: "the move had finished"},
			job: &jobRow{Kind: KindCancelled, Seq: endSeq, Reason: "Cancelled by key k1 of account acme", Detail: "the move had finished", VmState: "Active",
				TaskState: "Migrating", Text: "Cancelled by key k1 of account acme", Obj: `{"by":"key k1 of account acme","step":2,"task_state":"Migrating"}`, StartedMs: ref.At - 5,
				ErrorCode: "Cancelled"},
			ev: eventRow{VmID: "vm1", Type: "JobCancelled", JobID: "j1", AtMs: ref.At, VmState: "Active", Reason: "Cancelled by key k1 of account acme"}},
		{name: "rejected", value: &schemas.JobRejected{JobRef: ref, Reason: "InvalidState", Detail: "VM is Stopped", AllowedActions: []string{"start"}, Caller: caller},
			job: &jobRow{Kind: KindRejected, Seq: endSeq, Reason: "InvalidState", Detail: "VM is Stopped", Text: "VM is Stopped", Obj: `{"allowed_actions":["start"]}`, StartedMs: ref.At,
				ErrorCode: "InvalidState", Caller: caller},
			ev: eventRow{VmID: "vm1", Type: "JobRejected", JobID: "j1", AtMs: ref.At, Reason: "InvalidState"}},
		{name: "failed for a reason outside the codes", value: &schemas.JobFailed{JobRef: ref, Reason: "Gremlins", StartedAt: ref.At},
			job: &jobRow{Kind: KindFailed, Seq: endSeq, Reason: "Gremlins", StartedMs: ref.At, ErrorCode: schemas.CodeUnknown},
			ev:  eventRow{VmID: "vm1", Type: "JobFailed", JobID: "j1", AtMs: ref.At, Reason: "Gremlins"}},
		{name: "state changed", value: &schemas.VmStateChanged{VmID: "vm1", VmState: "Running", TaskState: "", PowerState: "PowerOn", HostID: "h1", JobID: "j1", Reason: "started", UpdatedAt: 42},
			ev: eventRow{VmID: "vm1", Type: "VmStateChanged", JobID: "j1", AtMs: 42, VmState: "Running", PowerState: "PowerOn", HostID: "h1", Reason: "started"}},
		{name: "power observed", value: &schemas.PowerStateObserved{VmID: "vm1", HostID: "h2", PowerState: "PowerOff", At: 43},
			ev: eventRow{VmID: "vm1", Type: "PowerStateObserved", AtMs: 43, PowerState: "PowerOff", HostID: "h2"}},
		{name: "host alert without vm keeps the kafka time", key: "", value: &schemas.AlertRaised{AlertID: "a1", HostID: "h3", Kind: "HostAlert", Message: "no ping"},
			ev: eventRow{Type: "AlertRaised", AtMs: 999, HostID: "h3", Reason: "HostAlert: no ping"}},
		{name: "expunged", value: &schemas.VmExpunged{VmID: "vm1", At: 44},
			ev: eventRow{VmID: "vm1", Type: "VmExpunged", AtMs: 44}},
		{name: "volume", value: &schemas.VolumeChanged{VmID: "vm1", JobID: "j1", At: 45, Volume: schemas.Volume{VolumeID: "v1", Name: "root",
			Kind: "Root", PoolID: "p1", SizeMB: 1024, State: "Ready"}},
			ev: eventRow{VmID: "vm1", Type: "VolumeChanged", JobID: "j1", AtMs: 45, Reason: `Root volume v1 ("root", 1024 MiB on pool p1) Ready`}},
		{name: "volume deleted", value: &schemas.VolumeChanged{VmID: "vm1", At: 46, Deleted: true, Volume: schemas.Volume{VolumeID: "v2", Kind: "Data"}},
			ev: eventRow{VmID: "vm1", Type: "VolumeChanged", AtMs: 46, Reason: "Data volume v2 deleted"}},
		{name: "nic", value: &schemas.NicChanged{VmID: "vm1", At: 47, Nic: schemas.Nic{NicID: "n1", NetworkID: "net1", IP: "10.0.0.2"}},
			ev: eventRow{VmID: "vm1", Type: "NicChanged", AtMs: 47, Reason: "NIC n1 on network net1: 10.0.0.2"}},
		{name: "nic released", value: &schemas.NicChanged{VmID: "vm1", At: 48, Released: true, Nic: schemas.Nic{NicID: "n1", IP: "10.0.0.2"}},
			ev: eventRow{VmID: "vm1", Type: "NicChanged", AtMs: 48, Reason: "NIC n1 released 10.0.0.2"}},
		{name: "volume snapshot", value: &schemas.VolumeSnapshotTaken{VmID: "vm1", VolumeID: "v1", SnapshotName: "s", JobID: "j2", At: 49},
			ev: eventRow{VmID: "vm1", Type: "VolumeSnapshotTaken", JobID: "j2", AtMs: 49, Reason: `snapshot "s" of volume v1 taken`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := schemas.Record{Topic: schemas.TopicVmEvents, Key: tt.key, Value: tt.value, Partition: 4, Offset: 17, TimestampMs: 999}
			var job jobRow
			isJob, ev, err := rowsOf(rec, nil, &job)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid([]byte(ev.Payload)) {
				t.Errorf("payload is not JSON: %s", ev.Payload)
			}
			var back map[string]any
			_ = json.Unmarshal([]byte(ev.Payload), &back)
			if len(back) == 0 {
				t.Errorf("payload carries no fields: %s", ev.Payload)
			}
			ev.Payload = ""
			tt.ev.Topic, tt.ev.Partition, tt.ev.Offset = schemas.TopicVmEvents, 4, 17
			if ev != tt.ev {
				t.Errorf("event row\n got %+v\nwant %+v", ev, tt.ev)
			}
			if isJob != (tt.job != nil) {
				t.Fatalf("job row = %+v (%v), want %+v", job, isJob, tt.job)
			}
			if !isJob {
				return
			}
			want := *tt.job
			want.JobID, want.VmID, want.Account, want.JobType, want.Origin, want.AtMs = "j1", "vm1", "acme", "Start", "api", ref.At
			want.Topic, want.Partition, want.Offset = schemas.TopicVmEvents, 4, 17
			if job != want {
				t.Errorf("job row\n got %+v\nwant %+v", job, want)
			}
		})
	}
}

func TestBatchDrop(t *testing.T) {
	b := newBatch()
	for p := int32(0); p < 3; p++ {
		for o := int64(0); o < 2; o++ {
			kr := &kgo.Record{Topic: schemas.TopicVmEvents, Partition: p, Offset: o}
			b.add(kr, &recordRows{job: jobRow{Topic: kr.Topic, Partition: p, Offset: o}, event: eventRow{Topic: kr.Topic, Partition: p, Offset: o},
				hasJob: true, hasEvent: true})
		}
	}
	b.add(&kgo.Record{Topic: schemas.TopicVmEvents, Partition: 3, Offset: 9}, &recordRows{}) // dead-lettered
	b.add(&kgo.Record{Topic: schemas.TopicHostStatus, Partition: 1, Offset: 4},
		&recordRows{host: hostRow{Topic: schemas.TopicHostStatus, Partition: 1, Offset: 4}, hasHost: true})
	b.add(&kgo.Record{Topic: schemas.TopicLeaseEvents, Partition: 0, Offset: 2},
		&recordRows{lease: leaseRow{Topic: schemas.TopicLeaseEvents, Partition: 0, Offset: 2}, hasLease: true})
	vm := b.next[schemas.TopicVmEvents]
	if b.len() != 14 || b.records != 9 || vm[3].Offset != 10 || vm[1].Offset != 2 || b.next[schemas.TopicHostStatus][1].Offset != 5 {
		t.Fatalf("after add: rows %d records %d next %v", b.len(), b.records, b.next)
	}
	// Partition 1 of vm.events.v1 goes; partition 1 of host.status.v1 stays.
	b.drop(map[string][]int32{schemas.TopicVmEvents: {1, 3}})
	if b.len() != 10 || len(b.hosts) != 1 || len(b.leases) != 1 {
		t.Fatalf("rows after drop = %d (hosts %d, leases %d), want 10", b.len(), len(b.hosts), len(b.leases))
	}
	for _, r := range b.jobs {
		if r.Partition == 1 {
			t.Fatalf("job row of dropped partition kept: %+v", r)
		}
	}
	if _, ok := b.next[schemas.TopicVmEvents][1]; ok {
		t.Fatal("offset of dropped partition 1 kept")
	}
	if _, ok := b.next[schemas.TopicVmEvents][3]; ok {
		t.Fatal("offset of dropped partition 3 kept")
	}
	b.drop(map[string][]int32{schemas.TopicVmEvents: {0, 2}, schemas.TopicHostStatus: {1}, schemas.TopicLeaseEvents: {0}})
	if b.records != 0 || b.len() != 0 || len(b.next) != 0 {
		t.Fatalf("batch not empty after dropping every partition: %+v", b)
	}
}

func TestLeaseHostChangedIsALeaseEvent(t *testing.T) {
	r := schemas.Record{Topic: schemas.TopicLeaseEvents, Key: "zone-1", Partition: 1, Offset: 9,
		Value: &schemas.LeaseHostChanged{ZoneID: "zone-1", HostID: "h1", Status: "Down", ResourceState: "Enabled", Leases: []string{"l1"}, Reason: "fenced", At: 1000}}
	rr, err := recordRowsOf(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rr.hasLease || rr.lease.Event != "host_changed" || rr.lease.ZoneID != "zone-1" || rr.lease.Offset != 9 ||
		!strings.Contains(rr.lease.Detail, "h1") || !strings.Contains(rr.lease.Detail, "l1") {
		t.Fatalf("row %+v", rr.lease)
	}
}
