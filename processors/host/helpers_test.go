package host

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func hello(vms ...string) *schemas.AgentConnected {
	return &schemas.AgentConnected{
		HostID: "h1", Name: "host-1", AgentID: "agent-a", ZoneID: "z1", PodID: "p1", ClusterID: "c1",
		Hypervisor: "sim", CPU: 8, MemoryMB: 16384, Tags: []string{"ssd"},
		Properties: map[string]string{"rack": "r7"}, VmIDs: vms,
	}
}

func pingOf(seq int64, vms ...string) *schemas.AgentPing {
	return &schemas.AgentPing{HostID: "h1", ReportSeq: seq, VmIDs: vms}
}

// up returns h1 as its agent's first report round leaves it at t0: the
// hello and the round's ping.
func up(t *testing.T, m *Machine, vms ...string) *schemas.HostRecord {
	t.Helper()
	r, _ := m.Step(nil, rec(hello(vms...)), t0)
	r, _ = m.Step(r, rec(pingOf(1, vms...)), t0)
	if r.Status.Status != StatusUp {
		t.Fatalf("h1 after its first round: %+v", r.Status)
	}
	return r
}

func cmd() schemas.HostCommand {
	return schemas.HostCommand{CommandID: "c", HostID: "h1", Account: "admin"}
}

func rec(v any) schemas.Record {
	return schemas.Record{Topic: schemas.TopicHostEvents, Key: "h1", Value: v, Partition: 2, Offset: 41}
}

// statuses returns the HostStatus outputs after checking that each change
// went out three times: host.status.v1 by host, and by zone to placement
// and leases.
func statuses(t *testing.T, out []schemas.Record) []*schemas.HostStatus {
	t.Helper()
	var sts []*schemas.HostStatus
	topics := map[string]int{}
	for _, r := range out {
		st, ok := r.Value.(*schemas.HostStatus)
		if !ok {
			continue
		}
		topics[r.Topic]++
		want := st.ZoneID
		if r.Topic == schemas.TopicHostStatus {
			want = st.HostID
			sts = append(sts, st)
		}
		if r.Key != want {
			t.Fatalf("%s keyed %q, want %q", r.Topic, r.Key, want)
		}
	}
	for _, topic := range []string{schemas.TopicHostStatus, schemas.TopicPlacementRequests, schemas.TopicLeaseCommands} {
		if topics[topic] != len(sts) {
			t.Fatalf("status published %d times on %s, want %d: %v", topics[topic], topic, len(sts), topics)
		}
	}
	return sts
}

func roundTrip(t *testing.T, r *schemas.HostRecord) {
	t.Helper()
	if r == nil {
		return
	}
	b, err := schemas.Marshal(r)
	if err != nil {
		t.Fatalf("marshal host: %v", err)
	}
	v, err := schemas.Unmarshal(b)
	if err != nil {
		t.Fatalf("unmarshal host: %v", err)
	}
	back, ok := v.(*schemas.HostRecord)
	if !ok {
		t.Fatalf("unmarshal host: got %T", v)
	}
	if !reflect.DeepEqual(canon(back), canon(r)) {
		t.Fatalf("round trip changed the host:\n got %+v\nwant %+v", back, r)
	}
}

// canon maps empty slices and maps to nil: Avro does not tell them apart.
func canon(r *schemas.HostRecord) schemas.HostRecord {
	c := *r
	c.Status = published(r.Status)
	c.Status.LastPingAt, c.Status.UpdatedAt, c.Status.Reason = r.Status.LastPingAt, r.Status.UpdatedAt, r.Status.Reason
	if len(c.VmLastSeen) == 0 {
		c.VmLastSeen = nil
	} else {
		c.VmLastSeen = maps.Clone(c.VmLastSeen)
	}
	if len(c.MissingSent) == 0 {
		c.MissingSent = nil
	}
	return c
}
