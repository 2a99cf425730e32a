package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/memory"
	pj "github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/schemas"
)

// tables are the tables the projector writes, job_journal first.
var tables = []string{"job_journal", "vm_events", "host_events", "lease_events"}

// log is a fleet's history produced once onto an embedded broker, which
// every repetition projects again under a new consumer group.
type log struct {
	broker  *kafka.Broker
	kcfg    kafka.Config
	cl      *kgo.Client
	adm     *kadm.Client
	records int64 // the sum of the topics' end offsets
}

func startLog(ctx context.Context, recs []schemas.Record) (*log, error) {
	br, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		return nil, err
	}
	l := &log{broker: br, kcfg: kafka.Config{Brokers: br.Addrs()}}
	if l.cl, err = kgo.NewClient(l.kcfg.Opts()...); err != nil {
		br.Close()
		return nil, err
	}
	l.adm = kadm.NewClient(l.cl)
	if err := l.fill(ctx, recs); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (l *log) fill(ctx context.Context, recs []schemas.Record) error {
	if err := l.kcfg.EnsureTopics(ctx, l.cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		return err
	}
	if err := l.kcfg.Produce(ctx, l.cl, schemas.NewCodec(nil), recs...); err != nil {
		return fmt.Errorf("produce the history: %w", err)
	}
	ends, err := l.adm.ListEndOffsets(ctx, pj.Topics...)
	if err != nil {
		return err
	}
	ends.Each(func(o kadm.ListedOffset) { l.records += o.Offset })
	if l.records != int64(len(recs)) {
		return fmt.Errorf("the log holds %d records, %d produced", l.records, len(recs))
	}
	return nil
}

func (l *log) close() {
	l.cl.Close()
	l.broker.Close()
}

// committed is the sum of the offsets group has committed (0 before its
// first commit).
func (l *log) committed(ctx context.Context, group string) int64 {
	offs, err := l.adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	return sum
}

// limitBlockRows is the block size of the limit's inserts: clickhouse-client's
// default (1,048,576 rows) makes a vm_events block of over 2 GiB, which the
// test server's per-query memory limit (1.86 GiB) refuses.
const limitBlockRows = 262_144

// ingestSample is one repetition: the projector's time and rows, and the
// limit's time for the same rows.
type ingestSample struct {
	took, limit   time.Duration
	rows, jobRows uint64
	// The server's CPU time over each (system.events).
	serverCPU, limitServerCPU time.Duration
}

// ingestOnce projects the whole log into a fresh database with the
// projector's defaults, timed from Run's start to the commit of the last
// offset; then inserts the rows it wrote (dumped as TabSeparated, not
// timed) into another fresh database with clickhouse-client, one process
// per table side by side, timed from the processes' start to the exit of the
// last one.
func ingestOnce(ctx context.Context, s *server, l *log, run int, lg *slog.Logger) (ingestSample, error) {
	var out ingestSample
	db, err := s.freshDatabase(ctx)
	if err != nil {
		return out, err
	}
	defer s.drop(db)
	group := fmt.Sprintf("bench-journal-%d-%d", run, time.Now().UnixNano())
	p, err := pj.New(pj.Config{Kafka: l.kcfg, Addr: s.addr, Access: s.access, Database: db, Group: group, Logger: lg})
	if err != nil {
		return out, err
	}
	// The collector as `vmplane projector` sets it by default
	// (--gc-percent); the embedded broker in this process gets it too.
	defer debug.SetGCPercent(debug.SetGCPercent(memory.RecommendedGCPercent))
	stopProfile, err := harness.CPUProfile(os.Getenv("VMPLANE_BENCH_CPUPROFILE"), lg)
	if err != nil {
		return out, err
	}
	defer stopProfile()
	cpu := s.cpu(ctx)
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.Run(pctx) }()
	for l.committed(ctx, group) < l.records {
		select {
		case err := <-done:
			cancel()
			return out, fmt.Errorf("projector stopped before the last commit: %v", err)
		case <-ctx.Done():
			cancel()
			// Run returns nil when cancelled: anything else failed first.
			return out, errors.Join(ctx.Err(), <-done)
		case <-time.After(5 * time.Millisecond):
		}
	}
	out.took = time.Since(start)
	stopProfile()
	out.serverCPU = s.cpu(ctx) - cpu
	cancel()
	if err := <-done; err != nil {
		return out, err
	}

	dumps := make([][]byte, len(tables))
	counts := make([]uint64, len(tables))
	for i, t := range tables {
		if dumps[i], err = s.dump(ctx, db, t); err != nil {
			return out, err
		}
		counts[i] = uint64(bytes.Count(dumps[i], []byte{'\n'}))
		out.rows += counts[i]
	}
	out.jobRows = counts[0]

	out.limit, out.limitServerCPU, err = insertLimit(ctx, s, dumps, counts)
	return out, err
}

// insertLimit inserts the dumped tables into a fresh database with
// clickhouse-client, one process per table side by side, and returns the
// wall clock from the processes' start to the exit of the last and the
// server's CPU time over it.
func insertLimit(ctx context.Context, s *server, dumps [][]byte, counts []uint64) (took, serverCPU time.Duration, err error) {
	db, err := s.freshDatabase(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer s.drop(db)
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	cpu := s.cpu(ctx)
	start := time.Now()
	for i, t := range tables {
		wg.Go(func() {
			cmd := s.clientCmd(ctx, fmt.Sprintf("INSERT INTO `%s`.%s FORMAT TabSeparated", db, t), bytes.NewReader(dumps[i]),
				"--max_insert_block_size", strconv.Itoa(limitBlockRows))
			if b, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("clickhouse-client insert into %s: %v: %s", t, err, b)
			}
		})
	}
	wg.Wait()
	took, serverCPU = time.Since(start), s.cpu(ctx)-cpu
	for i, t := range tables {
		if errs[i] != nil {
			return 0, 0, errs[i]
		}
		if n, err := s.count(ctx, db, t); err != nil || n != counts[i] {
			return 0, 0, fmt.Errorf("limit: %s holds %d rows (%v), want %d", t, n, err, counts[i])
		}
	}
	return took, serverCPU, nil
}
