package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
)

// The reader ends at the listed last stable offset although the log ends
// in an aborted transaction and a marker, and hands over only the
// committed records, in order.
func TestPositionReaderEndsPastAbortedTail(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := kafka.Config{Brokers: b.Addrs()}
	const topic = "position-test"
	cl, err := kgo.NewClient(cfg.Opts(kgo.TransactionalID("position-test"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(t.Context(), 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	txn := func(commit kgo.TransactionEndTry, values ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(t.Context(), commit); err != nil {
			t.Fatal(err)
		}
	}
	txn(kgo.TryCommit, "a", "b")
	txn(kgo.TryAbort, "x", "y")
	txn(kgo.TryCommit, "c")
	txn(kgo.TryAbort, "z")
	lso, err := kafka.ListOffsets(t.Context(), adm.ListCommittedOffsets, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := lso.Lookup(topic, 0)
	empty, _ := lso.Lookup(topic, 1)
	rd := kafka.NewPositionReader(cl, topic, map[int32]int64{}, map[int32]int64{0: end.Offset, 1: empty.Offset})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got string
	for !rd.Done() {
		recs, _, err := rd.Fetch(ctx)
		if err != nil {
			t.Fatalf("%v (left: %s)", err, rd.Left())
		}
		for _, r := range recs {
			got += string(r.Value)
		}
	}
	if got != "abc" {
		t.Fatalf("read %q, want the committed records abc", got)
	}
}
