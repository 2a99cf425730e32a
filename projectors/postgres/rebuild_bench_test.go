package postgres

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// batchSender collects records and produces them in one go.
type batchSender struct {
	tb    testing.TB
	codec *schemas.Codec
	recs  []*kgo.Record
}

func (s *batchSender) send(topic, key string, v any) {
	kr, err := kafka.ToKafka(s.tb.Context(), s.codec, schemas.Record{Topic: topic, Key: key, Value: v})
	if err != nil {
		s.tb.Fatal(err)
	}
	s.recs = append(s.recs, kr)
}

// BenchmarkRebuild replays a log of 5,000 VMs' deploys (about 40,000
// records) into fresh read models with Rebuild; rows/s counts the rows the
// rebuilt tables hold, records/s the records replayed.
func BenchmarkRebuild(b *testing.B) {
	if testing.Short() {
		b.Skip("needs the embedded broker and Postgres")
	}
	kcfg, _ := testkit.Kafka(b)
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	s := &batchSender{tb: b, codec: schemas.NewCodec(nil)}
	fleet(s, 5000)
	if err := cl.ProduceSync(b.Context(), s.recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var rows, records int64
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		dsn := testkit.Postgres(b)
		if err := Migrate(b.Context(), dsn); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := Rebuild(b.Context(), kcfg, dsn)
		if err != nil {
			b.Fatal(err)
		}
		rows, records, took = rows+st.Rows, records+st.Records, took+st.Took
	}
	b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
	b.ReportMetric(float64(records)/took.Seconds(), "records/s")
}
