package journal

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/benchmarks/fleet"
	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// BenchmarkJournalIngest projects a log of 20,000 jobs of a fleet.History (about
// 123,000 records, 202,000 rows over the four tables) from offset 0 into a
// fresh database with the projector's default batching, and reports the
// rows inserted per second from its start to the commit of the last offset.
// It is the profiling handle of the journal row of `make bench`
// (benchmarks/journal), which measures the same beside its limit.
func BenchmarkJournalIngest(b *testing.B) {
	if testing.Short() {
		b.Skip("needs the embedded broker and ClickHouse")
	}
	kcfg, _ := testkit.Kafka(b)
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	recs := fleet.History{Start: 1_760_000_000_000}.Records(0, 20_000)
	if err := produceRecords(b.Context(), cl, recs); err != nil {
		b.Fatal(err)
	}
	total, vmRecords := 0, 0
	for _, r := range recs {
		rr, err := recordRowsOf(r, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, present := range []bool{rr.hasJob, rr.hasEvent, rr.hasHost, rr.hasLease} {
			if present {
				total++
			}
		}
		if rr.hasEvent {
			vmRecords++
		}
	}

	adm := kadm.NewClient(cl)
	var took time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		addr, db := testkit.ClickHouse(b)
		group := fmt.Sprintf("bench-%d", i)
		p, err := New(Config{Kafka: kcfg, Addr: addr, Database: db, Group: group, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		conn, err := Open(addr, chserver.Access{})
		if err != nil {
			b.Fatal(err)
		}
		if err := Migrate(b.Context(), conn, db); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		ctx, cancel := context.WithCancel(b.Context())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		for committedOf(b, adm, group) < int64(len(recs)) {
			time.Sleep(5 * time.Millisecond)
		}
		took += time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		var n uint64
		if err := conn.QueryRow(b.Context(), fmt.Sprintf("SELECT count() FROM %s.vm_events FINAL", quoteIdent(db))).Scan(&n); err != nil || n != uint64(vmRecords) {
			b.Fatalf("vm_events holds %d rows (%v)", n, err)
		}
		conn.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total*b.N)/took.Seconds(), "rows/s")
	b.ReportMetric(float64(len(recs)*b.N)/took.Seconds(), "records/s")
}

// committedOf sums the offsets group has committed.
func committedOf(tb testing.TB, adm *kadm.Client, group string) int64 {
	offs, err := adm.FetchOffsets(tb.Context(), group)
	if err != nil {
		return 0 // the group does not exist before its first commit
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	return sum
}

// BenchmarkTakeRecords is the projector's CPU per record without Kafka or
// ClickHouse: 20,000 jobs of a fleet.History (about 123,000 records)
// decoded, turned into rows and added to a batch, which is then cut into
// the insert's columns as send does.
func BenchmarkTakeRecords(b *testing.B) {
	codec := schemas.NewCodec(nil)
	var krs []*kgo.Record
	for _, r := range (fleet.History{Start: 1_760_000_000_000}).Records(0, 20_000) {
		kr, err := kafka.ToKafka(b.Context(), codec, r)
		if err != nil {
			b.Fatal(err)
		}
		if spec, ok := schemas.TopicByName(kr.Topic); ok && kr.Key != nil {
			kr.Partition = schemas.PartitionOf(kr.Key, spec.PartitionsOf())
		}
		kr.Offset = int64(len(krs))
		krs = append(krs, kr)
	}
	bt := newBatch()
	var ps payloads
	var jobs jobColumns
	var events eventColumns
	for b.Loop() {
		bt.reset()
		bt.grow(krs)
		for _, kr := range krs {
			rec, err := kafka.FromKafka(b.Context(), codec, kr)
			if err != nil {
				b.Fatal(err)
			}
			rr, err := recordRowsOf(rec, &ps)
			if err != nil {
				b.Fatal(err)
			}
			bt.add(kr, &rr)
		}
		for lo := 0; lo < len(bt.jobs); lo += sendRows {
			_ = jobs.of(bt.jobs[lo:min(lo+sendRows, len(bt.jobs))])
		}
		for lo := 0; lo < len(bt.events); lo += sendRows {
			_ = events.of(bt.events[lo:min(lo+sendRows, len(bt.events))])
		}
	}
	b.ReportMetric(float64(len(krs)*b.N)/b.Elapsed().Seconds(), "records/s")
}
