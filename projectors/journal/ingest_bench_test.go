package journal

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// BenchmarkJournalIngest projects a log of 5,000 jobs (about 30,700
// records, 56,000 rows over the four tables) from offset 0 into a fresh
// database with the projector's default batching, and reports the rows
// inserted per second from its start to the commit of the last offset.
func BenchmarkJournalIngest(b *testing.B) {
	if testing.Short() {
		b.Skip("needs the embedded broker and ClickHouse")
	}
	br, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	kcfg := kafka.Config{Brokers: br.Addrs(), Replication: 1}
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := kafka.EnsureTopics(b.Context(), cl, schemas.Topics, 1); err != nil {
		b.Fatal(err)
	}
	recs := fleetRecords(5000, 1_760_000_000_000)
	if err := produceRecords(b.Context(), cl, recs); err != nil {
		b.Fatal(err)
	}
	total, vmRecords := 0, 0
	for _, r := range recs {
		rr, err := recordRowsOf(r)
		if err != nil {
			b.Fatal(err)
		}
		for _, present := range []bool{rr.job != nil, rr.event != nil, rr.host != nil, rr.lease != nil} {
			if present {
				total++
			}
		}
		if rr.event != nil {
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
		conn, err := Open(addr)
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

// BenchmarkJournalInsertLimit is the limit BenchmarkJournalIngest is
// compared with: the rows the projector writes for the same 5,000 jobs,
// rendered as TSV beforehand and inserted into a fresh database by
// clickhouse-client, one process per table side by side as the projector
// inserts its tables. It reports rows per second from the start of the
// clients to the exit of the last one (process start included, as for the
// projector's connect and group join).
func BenchmarkJournalInsertLimit(b *testing.B) {
	if testing.Short() {
		b.Skip("needs ClickHouse and clickhouse-client")
	}
	client, err := exec.LookPath("clickhouse-client")
	if err != nil {
		b.Fatalf("the limit needs clickhouse-client: %v", err)
	}
	bt := newBatch()
	for i, r := range fleetRecords(5000, 1_760_000_000_000) {
		r.Offset = int64(i) // as if read from one partition of the log
		rr, err := recordRowsOf(r)
		if err != nil {
			b.Fatal(err)
		}
		bt.add(&kgo.Record{Topic: r.Topic, Offset: int64(i)}, rr)
	}
	tables := []struct {
		stmt    string
		columns []any
	}{
		{insertJobs, jobColumns(bt.jobs)},
		{insertEvents, eventColumns(bt.events)},
		{insertHosts, hostColumns(bt.hosts)},
		{insertLeases, leaseColumns(bt.leases)},
	}
	tsv := make([][]byte, len(tables))
	for i, t := range tables {
		tsv[i] = renderTSV(b, t.columns)
	}
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		addr, db := testkit.ClickHouse(b)
		conn, err := Open(addr)
		if err != nil {
			b.Fatal(err)
		}
		if err := Migrate(b.Context(), conn, db); err != nil {
			b.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(addr)
		b.StartTimer()
		start := time.Now()
		errs := make([]error, len(tables))
		var wg sync.WaitGroup
		for i, t := range tables {
			wg.Go(func() {
				cmd := exec.CommandContext(b.Context(), client, "--host", host, "--port", port,
					"--query", fmt.Sprintf(t.stmt, quoteIdent(db))+" FORMAT TabSeparated")
				cmd.Stdin = bytes.NewReader(tsv[i])
				if out, err := cmd.CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("%v: %s", err, out)
				}
			})
		}
		wg.Wait()
		took += time.Since(start)
		b.StopTimer()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		var n uint64
		if err := conn.QueryRow(b.Context(), fmt.Sprintf("SELECT count() FROM %s.vm_events FINAL", quoteIdent(db))).Scan(&n); err != nil || n != uint64(len(bt.events)) {
			b.Fatalf("vm_events holds %d rows (%v), want %d", n, err, len(bt.events))
		}
		conn.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(bt.len()*b.N)/took.Seconds(), "rows/s")
}

// renderTSV renders columns (as jobColumns and the like give them) as the
// rows of a TabSeparated insert.
func renderTSV(tb testing.TB, columns []any) []byte {
	n := 0
	switch c := columns[0].(type) {
	case []string:
		n = len(c)
	default:
		tb.Fatalf("first column is %T", c)
	}
	esc := strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`)
	var buf []byte
	for i := range n {
		for j, c := range columns {
			if j > 0 {
				buf = append(buf, '\t')
			}
			switch c := c.(type) {
			case []string:
				buf = append(buf, esc.Replace(c[i])...)
			case []int64:
				buf = strconv.AppendInt(buf, c[i], 10)
			case []int32:
				buf = strconv.AppendInt(buf, int64(c[i]), 10)
			case []uint32:
				buf = strconv.AppendUint(buf, uint64(c[i]), 10)
			case []uint8:
				buf = strconv.AppendUint(buf, uint64(c[i]), 10)
			default:
				tb.Fatalf("column %d is %T", j, c)
			}
		}
		buf = append(buf, '\n')
	}
	return buf
}
