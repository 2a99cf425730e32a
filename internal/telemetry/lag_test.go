package telemetry

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
)

// TestLagAtRestIsZero: a transactional producer leaves a commit marker at
// the end of the partition; a consumer that has every record is 0 behind,
// and one that misses two records is 2 behind.
func TestLagAtRestIsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	ctx := t.Context()
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cfg := kafka.Config{Brokers: b.Addrs()}
	cl, err := kgo.NewClient(cfg.Opts(kgo.TransactionalID("lag-test"), kgo.DefaultProduceTopic("t"))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	commit := func(group string, at int64) {
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: "t", Partition: 0, At: at, LeaderEpoch: -1})
		if _, err := adm.CommitOffsets(ctx, group, o); err != nil {
			t.Fatal(err)
		}
	}
	commit("done", 3)
	commit("behind", 1)
	got := map[string]int64{}
	for _, l := range ExcludeMarkers(ctx, cl, ComputeLag(ctx, adm, []LagSource{{Group: "done"}, {Group: "behind"}})) {
		got[l.Group] = l.Lag
	}
	if got["done"] != 0 || got["behind"] != 2 {
		t.Fatalf("lag %v, want done 0 and behind 2", got)
	}
}
