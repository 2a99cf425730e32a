package engine

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/memory"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// BenchmarkRestore restores 100,000 VM states, shaped like the storm's
// seed, from a broker in the same process: the reading, decoding and
// storing of a restore, one op a whole restore, at the processors'
// collector setting.
func BenchmarkRestore(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(memory.RecommendedGCPercent))
	cfg, _ := testkit.Kafka(b)
	cl, err := kgo.NewClient(cfg.Opts(kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(200_000))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	const n = 100_000
	const at = int64(1_763_800_000_000)
	codec := schemas.NewCodec(nil)
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		h := fmt.Sprintf("host-p%d-c%d-h%d", i%10000%10, i%10000%7, i%10000)
		v := &schemas.VmRecord{VmID: fmt.Sprintf("vm-%09d", i), Name: fmt.Sprintf("web-%06d", i), Account: fmt.Sprintf("acct-%d", i%100),
			ZoneID: "zone-1", Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 512},
			VmState: "Active", PowerState: schemas.PowerOn, PowerHost: h, PowerStateUpdateTime: at, PowerStateUpdateCount: 3,
			HostID: h, PodID: "p1", ClusterID: "p1-c2", Epoch: 4,
			Recent:    []schemas.RecentJob{{JobID: fmt.Sprintf("job-%09d", i), State: "succeeded"}},
			ReportSeq: map[string]int64{h: 1 << 33}, CreatedAt: at, UpdatedAt: at + 30}
		r, err := kafka.ToKafka(b.Context(), codec, schemas.Record{Topic: schemas.TopicVmState, Key: v.VmID, Value: v})
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(b.Context(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var parts []int32
	for i := range schemas.Partitions[schemas.KeyVM] {
		parts = append(parts, i)
	}
	for b.Loop() {
		p := newProcessor(b, cfg, "a", &fakeClock{t: time.Unix(1_700_000_000, 0)})
		got, err := p.restore(b.Context(), cl, parts)
		if err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("restored %d keys, want %d", got, n)
		}
	}
}
