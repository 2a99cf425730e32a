package journal

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// cutProxy forwards TCP to ClickHouse and can cut it: while cut it closes
// every connection and refuses new ones, which is what the projector sees of
// a stopped server, without stopping the server other tests share.
type cutProxy struct {
	ln     net.Listener
	target string
	down   atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.down.Load() {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); s.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, s); s.Close(); c.Close() }()
	}
}

// cut drops every connection and refuses new ones until restore.
func (p *cutProxy) cut() {
	p.down.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *cutProxy) restore() { p.down.Store(false) }

// fleetRecords are n jobs' events plus host status changes and lease
// notifications, for every topic the journal reads.
func fleetRecords(n int, base int64) []schemas.Record {
	var out []schemas.Record
	for i := range n {
		vm, job := fmt.Sprintf("vm-%d", i%40), fmt.Sprintf("job-%05d", i)
		for _, v := range jobEvents(vm, job, base+int64(i)*10) {
			out = append(out, schemas.Record{Topic: schemas.TopicVmEvents, Key: vm, Value: v})
		}
		if i%10 == 0 {
			host := fmt.Sprintf("h%d", i%7)
			out = append(out, schemas.Record{Topic: schemas.TopicHostStatus, Key: host, Value: &schemas.HostStatus{
				HostID: host, ZoneID: "zone-1", Status: []string{"Up", "Disconnected", "Down"}[i%3], ResourceState: "Enabled",
				Reservable: i%3 == 0, Reason: "test", UpdatedAt: base + int64(i)*10 + 1}})
		}
		if i%25 == 0 {
			out = append(out, schemas.Record{Topic: schemas.TopicLeaseEvents, Key: "zone-1", Value: &schemas.LeaseStatusChanged{
				LeaseID: fmt.Sprintf("lease-%d", i%4), ZoneID: "zone-1", Project: "acme", Status: "ACTIVE", Degraded: i%2 == 0,
				Event: "healed", At: base + int64(i)*10 + 2}})
		}
	}
	return out
}

func produceRecords(ctx context.Context, cl *kgo.Client, recs []schemas.Record) error {
	return (kafka.Config{}).Produce(ctx, cl, schemas.NewCodec(nil), recs...)
}

// TestOutageAndKillLoseNothingDoubleNothing produces a stream while the
// projector runs, cuts ClickHouse off mid-stream for a few seconds, kills
// the projector mid-stream and starts another: once everything is
// committed, every table holds exactly one row per record (FINAL), and the
// aggregates count every job once.
// outage is how long ClickHouse stays cut off: 3 s in the suite,
// VMPLANE_TEST_CH_OUTAGE (e.g. 30s) for the acceptance run.
func outage() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("VMPLANE_TEST_CH_OUTAGE")); err == nil && d > 0 {
		return d
	}
	return 3 * time.Second
}

func TestOutageAndKillLoseNothingDoubleNothing(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	proxy := newCutProxy(t, addr)

	const jobs = 1200
	recs := fleetRecords(jobs, 1_760_000_000_000)
	want := map[string]int{}
	for _, r := range recs {
		want[r.Topic]++
	}

	start := func() (stop func() error) {
		p := newProjector(t, kcfg, proxy.addr(), db)
		p.cfg.FlushInterval = 200 * time.Millisecond
		stop, _ = run(t, p)
		return stop
	}
	stop := start()

	// The stream arrives in ten slices; the outage and the kill happen
	// between them, while the projector holds rows not yet committed.
	slice := len(recs) / 10
	for k := 0; k < 10; k++ {
		hi := min((k+1)*slice, len(recs))
		if k == 9 {
			hi = len(recs)
		}
		if err := produceRecords(t.Context(), cl, recs[k*slice:hi]); err != nil {
			t.Fatal(err)
		}
		switch k {
		case 2:
			proxy.cut()
			t.Log("clickhouse cut off")
		case 4:
			time.Sleep(outage()) // several failed attempts meanwhile
			proxy.restore()
			t.Log("clickhouse back")
		case 6:
			time.Sleep(150 * time.Millisecond)
			if err := stop(); err != nil { // a kill, as far as offsets go: nothing flushed on the way out
				t.Fatal(err)
			}
			stop = start()
		}
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, 60*time.Second, "every record committed", func() bool {
		return committed(t, cl, "journal-test") == int64(len(recs))
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	q := func(table string) string {
		return fmt.Sprintf("SELECT count() FROM %s.%s FINAL", quoteIdent(db), table)
	}
	for _, c := range []struct {
		table string
		want  int
	}{
		{"vm_events", want[schemas.TopicVmEvents]},
		{"job_journal", jobs * stepsPerJob},
		{"host_events", want[schemas.TopicHostStatus]},
		{"lease_events", want[schemas.TopicLeaseEvents]},
	} {
		if got := count(t, conn, q(c.table)); got != uint64(c.want) {
			t.Errorf("%s FINAL holds %d rows, want %d", c.table, got, c.want)
		}
	}
	if got := count(t, conn, fmt.Sprintf("SELECT count() FROM %s.jobs", quoteIdent(db))); got != jobs {
		t.Errorf("jobs view holds %d jobs, want %d", got, jobs)
	}
	if got := count(t, conn, fmt.Sprintf("SELECT count() FROM %s.job_ends FINAL WHERE duration_ms = 4", quoteIdent(db))); got != jobs {
		t.Errorf("job_ends FINAL holds %d jobs that ran 4 ms, want %d", got, jobs)
	}
	var ended uint64
	if err := conn.QueryRow(t.Context(), fmt.Sprintf("SELECT toUInt64(sum(n)) FROM (SELECT uniqExactMerge(jobs) AS n FROM %s.job_daily GROUP BY day, job_type, outcome, reason)",
		quoteIdent(db))).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended != jobs {
		t.Errorf("job_daily counts %d ended jobs, want %d", ended, jobs)
	}
	var host string
	var dur int64
	if err := conn.QueryRow(t.Context(), fmt.Sprintf("SELECT host_id, duration_ms FROM %s.jobs WHERE job_id = 'job-00007'", quoteIdent(db))).Scan(&host, &dur); err != nil {
		t.Fatal(err)
	}
	if host != "h1" || dur != 4 {
		t.Errorf("job-00007: host %q duration %d ms, want h1 and 4", host, dur)
	}
}
