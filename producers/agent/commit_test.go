package agent_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/schemas"
)

// TestCommandOffsetsCommittedOffPath: answering a command costs no offset
// commit on its path (the offsets are committed once a second), and when
// the agent stops every answered command's offset is committed, so a
// restarted agent does not get them again.
func TestCommandOffsetsCommittedOffPath(t *testing.T) {
	b := startBroker(t)
	var commits atomic.Int64
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		commits.Add(1)
		return nil, nil, false
	})
	s := newStackOn(t, b.Addrs(), time.Hour, nil)
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })

	const n = 20
	t0 := time.Now()
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		s.send(&schemas.StartVm{AgentCommand: cmd(id, "h1", fmt.Sprintf("v%d", i), 1), CPU: 1, MemoryMB: 64}, "h1")
		waitFor(s, 1, answerTo(id))
	}
	// One commit a second at most while the commands were answered (plus
	// one in flight when the loop began).
	if got, most := commits.Load(), int64(time.Since(t0)/time.Second)+2; got > most {
		t.Fatalf("%d offset commits for %d commands answered one by one in %v, want at most %d", got, n, time.Since(t0).Round(time.Millisecond), most)
	}

	s.stop()
	adm := kadm.NewClient(s.cl)
	ends, err := adm.ListEndOffsets(t.Context(), schemas.TopicAgentCommands)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(t.Context(), s.agent.Group())
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if e.Offset == 0 {
			return
		}
		c, ok := committed.Lookup(e.Topic, e.Partition)
		if !ok || c.At != e.Offset {
			t.Errorf("partition %d: committed %+v after stop, want %d (every answered command)", e.Partition, c, e.Offset)
		}
	})
}

// TestCommandsCommittedAfterTheGroupLosesItsCommits: the broker lost the
// agent's commits (they failed, or it restarted before the next one) and
// the member was dropped, so the group starts again below commands the
// agent already answered. Delivered again, they are answered again and
// their offsets committed this time: the group reaches the end of the
// partition instead of staying below it until the next command comes.
func TestCommandsCommittedAfterTheGroupLosesItsCommits(t *testing.T) {
	b := startBroker(t)
	var refuse atomic.Bool
	refuse.Store(true)
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := kreq.(*kmsg.OffsetCommitRequest)
		if !refuse.Load() {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	s := newStackOn(t, b.Addrs(), time.Hour, nil)
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	s.send(&schemas.StartVm{AgentCommand: cmd("c1", "h1", "v1", 1), CPU: 1, MemoryMB: 64}, "h1")
	waitFor(s, 1, answerTo("c1"))
	time.Sleep(1500 * time.Millisecond) // an autocommit, refused

	adm := kadm.NewClient(s.cl)
	if _, err := adm.LeaveGroup(t.Context(), kadm.LeaveGroup(s.agent.Group()).InstanceIDs(s.agent.Group())); err != nil {
		t.Fatal(err)
	}
	// Commits go through from here on: the redelivered command's mark
	// must be what takes the group to the end.
	refuse.Store(false)
	waitFor(s, 2, answerTo("c1")) // delivered again, answered again

	ends, err := adm.ListEndOffsets(t.Context(), schemas.TopicAgentCommands)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		committed, err := adm.FetchOffsets(t.Context(), s.agent.Group())
		if err != nil {
			t.Fatal(err)
		}
		var short []string
		ends.Each(func(e kadm.ListedOffset) {
			if c, ok := committed.Lookup(e.Topic, e.Partition); e.Offset > 0 && (!ok || c.At != e.Offset) {
				short = append(short, fmt.Sprintf("partition %d committed %d of %d", e.Partition, c.At, e.Offset))
			}
		})
		if len(short) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the commits were let through: %v", short)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
