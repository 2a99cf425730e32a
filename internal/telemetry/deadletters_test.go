package telemetry

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestDeadLettersFromOffsets: vmplane_dead_letters is dlq.v1's end minus
// start offset, a transaction's commit marker included; no dlq.v1, no
// sample.
func TestDeadLettersFromOffsets(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	ctx := t.Context()
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kafka.Config{Brokers: b.Addrs()}.Opts(kgo.TransactionalID("dlq-test"), kgo.DefaultProduceTopic(schemas.TopicDLQ))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, ok := CountDeadLetters(ctx, adm, schemas.TopicDLQ); ok {
		t.Fatal("a count without dlq.v1")
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, schemas.TopicDLQ); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if n, ok := CountDeadLetters(ctx, adm, schemas.TopicDLQ); !ok || n != 3 {
		t.Fatalf("count %d %v, want 3 (two dead letters and a commit marker)", n, ok)
	}
	RegisterDeadLetters(cl, schemas.TopicDLQ)
	var got float64
	collectDeadLetters(func(v float64, _ ...string) { got = v })
	if got != 3 {
		t.Fatalf("gauge %v", got)
	}
}
