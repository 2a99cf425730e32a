package storm

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
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

// TestReadTimesReadsToTheEndOfCommittedRecords checks that the record
// times are read through to each partition's end, past the transaction
// markers, and leave out an aborted transaction's records.
func TestReadTimesReadsToTheEndOfCommittedRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := &env{broker: b, kcfg: kafka.Config{Brokers: b.Addrs()}}
	if e.cl, err = kgo.NewClient(e.kcfg.Opts()...); err != nil {
		t.Fatal(err)
	}
	defer e.cl.Close()
	e.adm = kadm.NewClient(e.cl)
	if err := e.kcfg.EnsureTopics(ctx, e.cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	tx, err := kgo.NewClient(e.kcfg.Opts(kgo.TransactionalID("stages-test"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	t0 := time.UnixMilli(1_790_000_000_000)
	rec := func(topic, key, header, value string, ms int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(key), Timestamp: t0.Add(time.Duration(ms) * time.Millisecond),
			Headers: []kgo.RecordHeader{{Key: header, Value: []byte(value)}}}
	}
	succeeded := schemas.TypeName(&schemas.JobSucceeded{})
	for _, c := range []struct {
		commit bool
		recs   []*kgo.Record
	}{
		{true, []*kgo.Record{
			rec(schemas.TopicVmCommands, "vm-1", "command_id", "j1", 1),
			rec(schemas.TopicAgentCommands, "h1", "command_id", "j1", 3),
			rec(schemas.TopicVmAnswers, "vm-1", "command_id", "a1", 4),
			rec(schemas.TopicVmEvents, "vm-1", "type", succeeded, 6),
		}},
		// Aborted: none of these may count.
		{false, []*kgo.Record{
			rec(schemas.TopicVmCommands, "vm-2", "command_id", "j2", 10),
			rec(schemas.TopicVmAnswers, "vm-2", "command_id", "a2", 12),
		}},
		{true, []*kgo.Record{rec(schemas.TopicVmEvents, "vm-1", "type", "JobStepped", 7)}},
	} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tx.ProduceSync(ctx, c.recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(c.commit)); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := e.readTimes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if len(rt.command) != 1 || !rt.command["j1"].Equal(at(1)) || len(rt.agent) != 1 || !rt.agent["j1"].Equal(at(3)) {
		t.Fatalf("commands %v, agent commands %v; want j1 at +1 ms and +3 ms only", rt.command, rt.agent)
	}
	if len(rt.answer) != 1 || len(rt.answer["vm-1"]) != 1 || !rt.answer["vm-1"][0].Equal(at(4)) {
		t.Fatalf("answers %v; want vm-1 at +4 ms only", rt.answer)
	}
	if len(rt.final) != 1 || len(rt.final["vm-1"]) != 1 || !rt.final["vm-1"][0].Equal(at(6)) {
		t.Fatalf("final events %v; want vm-1's JobSucceeded at +6 ms only", rt.final)
	}
}
