package agent_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestCommandOffsetsCommittedOffPath: answering a command costs no offset
// commit on its path (the offsets are committed once a second), and when
// the agent stops every answered command's offset is committed, so a
// restarted agent does not get them again.
func TestCommandOffsetsCommittedOffPath(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the kfake broker")
	}
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
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
