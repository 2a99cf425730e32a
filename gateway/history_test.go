package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/schemas"
)

// historyEnv is the gateway over the in-memory read model and the real
// ClickHouse history, fed by the journal projector from kfake with vm-a1's
// life (deployed, stopped) and a job Postgres no longer has (job-old).
func historyEnv(t *testing.T) *env {
	t.Helper()
	addr, db := testkit.ClickHouse(t)
	kcfg, _ := testkit.Kafka(t)
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ms := t0.UnixMilli()
	state := func(vm, state, task, power, job string, at int64) *schemas.VmStateChanged {
		return &schemas.VmStateChanged{VmID: vm, Name: "web-1", Account: "acct-a", VmState: state, TaskState: task, PowerState: power,
			HostID: "host-1", JobID: job, Reason: state + " by " + job, UpdatedAt: at, CreatedAt: ms}
	}
	old := schemas.JobRef{JobID: "job-old", VmID: "vm-gone", Account: "acct-b", JobType: "Start", Origin: schemas.OriginAPI, At: ms}
	codec := schemas.NewCodec(nil)
	for _, v := range []any{
		state("vm-a1", "Active", "", "PowerOn", "job-a1", ms+1000),
		state("vm-a1", "Active", "Stopping", "PowerOn", "job-stop", ms+60_000),
		state("vm-a1", "Stopped", "", "PowerOff", "job-stop", ms+61_000),
		&schemas.JobAccepted{JobRef: old},
		&schemas.JobSucceeded{JobRef: old, VmState: "Active"},
	} {
		key := "vm-a1"
		if _, ok := v.(*schemas.VmStateChanged); !ok {
			key = "vm-gone"
		}
		kr, err := kafka.ToKafka(t.Context(), codec, schemas.Record{Topic: schemas.TopicVmEvents, Key: key, Value: v})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(t.Context(), kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p, err := journal.New(journal.Config{Kafka: kcfg, Addr: addr, Database: db, FlushInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h, err := journal.OpenHistory(addr, db, chserver.Access{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		ev, err := h.VmHistory(t.Context(), "vm-a1", 0)
		j, jerr := h.JobJournal(t.Context(), "job-old")
		if err == nil && jerr == nil && len(ev) == 3 && len(j) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history not projected: %d events (%v), %d journal lines (%v)", len(ev), err, len(j), jerr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return newEnv(t, gateway.Config{History: h})
}

func TestVmHistoryRoutes(t *testing.T) {
	e := historyEnv(t)

	rec := e.do(http.MethodGet, "/v1/vms/vm-a1/history", e.alice, nil)
	var hist api.List[api.VmHistoryEvent]
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &hist) != nil || len(hist.Items) != 3 ||
		hist.Items[2].VmState != "Stopped" || hist.Items[2].Reason != "Stopped by job-stop" || hist.Items[1].JobID != "job-stop" {
		t.Fatalf("history: %d %s", rec.Code, rec.Body)
	}

	// Before the stop job: Active on host-1, nothing pending.
	rec = e.do(http.MethodGet, "/v1/vms/vm-a1/history?at="+t0.Add(30*time.Second).Format(time.RFC3339), e.alice, nil)
	var asOf api.VmAsOf
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &asOf) != nil || asOf.VM.VmState != "Active" ||
		asOf.VM.HostID != "host-1" || asOf.PendingJob != "" || asOf.VM.PowerState != "PowerOn" {
		t.Fatalf("at +30s: %d %s", rec.Code, rec.Body)
	}
	// While it ran: the job is pending.
	rec = e.do(http.MethodGet, "/v1/vms/vm-a1/history?at="+t0.Add(60500*time.Millisecond).Format(time.RFC3339Nano), e.alice, nil)
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &asOf) != nil || asOf.VM.TaskState != "Stopping" || asOf.PendingJob != "job-stop" {
		t.Fatalf("at +60.5s: %d %s", rec.Code, rec.Body)
	}

	for _, c := range []struct {
		name, path, key string
		code            int
	}{
		{"another account's VM", "/v1/vms/vm-a1/history", e.bob, http.StatusNotFound},
		{"before the VM existed", "/v1/vms/vm-a1/history?at=" + t0.Format(time.RFC3339), e.alice, http.StatusNotFound},
		{"a bad instant", "/v1/vms/vm-a1/history?at=yesterday", e.alice, http.StatusUnprocessableEntity},
		{"the zero instant", "/v1/vms/vm-a1/history?at=0001-01-01T00:00:00Z", e.alice, http.StatusUnprocessableEntity},
		{"before 1970", "/v1/vms/vm-a1/history?at=1969-12-31T23:59:59Z", e.alice, http.StatusUnprocessableEntity},
		{"a VM nobody heard of", "/v1/vms/vm-zz/history", e.admin, http.StatusNotFound},
		{"an old job from ClickHouse, for its owner", "/v1/jobs/job-old/journal", e.bob, http.StatusOK},
		{"an old job of another account", "/v1/jobs/job-old/journal", e.alice, http.StatusNotFound},
		{"a job Postgres has", "/v1/jobs/job-a1/journal", e.alice, http.StatusOK},
	} {
		if rec := e.do(http.MethodGet, c.path, c.key, nil); rec.Code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, rec.Code, rec.Body, c.code)
		}
	}
	rec = e.do(http.MethodGet, "/v1/jobs/job-old/journal", e.admin, nil)
	var lines api.List[api.JournalLine]
	if json.Unmarshal(rec.Body.Bytes(), &lines) != nil || len(lines.Items) != 2 || lines.Items[1].Kind != "succeeded" {
		t.Errorf("journal of job-old: %s", rec.Body)
	}

	// Analysts' queries: admin only, read-only.
	q := func(key, sql string) (int, api.QueryResult) {
		rec := e.do(http.MethodPost, "/v1/journal/query", key, map[string]string{"sql": sql})
		var r api.QueryResult
		_ = json.Unmarshal(rec.Body.Bytes(), &r)
		return rec.Code, r
	}
	if code, r := q(e.admin, `SELECT vm_id, count() AS n FROM vm_events FINAL GROUP BY vm_id ORDER BY vm_id`); code != http.StatusOK ||
		len(r.Rows) != 2 || r.Rows[0][0] != "vm-a1" || r.Rows[0][1] != "3" {
		t.Errorf("admin query: %d %+v", code, r)
	}
	if code, _ := q(e.alice, "SELECT 1"); code != http.StatusForbidden {
		t.Errorf("user query: %d, want 403", code)
	}
	if code, _ := q(e.admin, "DROP TABLE vm_events"); code != http.StatusUnprocessableEntity {
		t.Errorf("DROP TABLE: %d, want 422", code)
	}
}

// TestJournalQueryBounds: analysts' queries against the real ClickHouse,
// with a tight analyst profile: a query reading too many rows is refused at
// once (422), one running too long is stopped (504), one the gateway gives
// up on first is killed (504), a huge answer is refused (422), another
// database and a bad query are 422 with ClickHouse's message; no answer
// names an address.
func TestJournalQueryBounds(t *testing.T) {
	addr, db := testkit.ClickHouse(t)
	_, otherDB := testkit.ClickHouse(t)
	err := chserver.EnsureAnalyst(t.Context(), addr, db, chserver.AnalystLimits{
		MaxExecutionTime: time.Second, MaxRowsToRead: 1_000_000,
		MaxResultRows: 1_000_000, MaxResultBytes: 4 << 20, MaxMemoryUsage: 500_000_000})
	if err != nil {
		t.Fatal(err)
	}
	open := func(l journal.QueryLimits) *env {
		h, err := journal.OpenHistory(addr, db, chserver.Access{}, journal.WithQueryLimits(l))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return newEnv(t, gateway.Config{History: h})
	}
	e := open(journal.DefaultQueryLimits())
	impatient := open(journal.QueryLimits{Timeout: 300 * time.Millisecond, MaxBytes: 1 << 20})
	const slow = "SELECT count() FROM system.numbers WHERE sleepEachRow(0.00001) = 0"
	address := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|localhost:|:\d{4,5}\b|tcp`)
	for _, c := range []struct {
		name    string
		e       *env
		sql     string
		code    int
		errCode string
		says    string
		within  time.Duration
	}{
		{"too many rows read", e, "SELECT sum(number) FROM (SELECT number FROM system.numbers LIMIT 50000000)",
			http.StatusUnprocessableEntity, "query_limit", "Limit for rows", 3 * time.Second},
		{"past max_execution_time", e, slow, http.StatusGatewayTimeout, "query_timeout", "Timeout exceeded", 4 * time.Second},
		{"past the gateway's timeout", impatient, slow, http.StatusGatewayTimeout, "query_timeout", "ran longer than 300ms", 2 * time.Second},
		{"a 200 MB answer", e, "SELECT concat(toString(number), '" + strings.Repeat("x", 1000) + "') FROM system.numbers LIMIT 200000",
			http.StatusUnprocessableEntity, "query_limit", "Limit for result", 10 * time.Second},
		{"another database", e, "SELECT count() FROM `" + otherDB + "`.vm_events",
			http.StatusUnprocessableEntity, "invalid_request", "Access denied to database " + otherDB, 3 * time.Second},
		{"a bad query", e, "SELEC 1", http.StatusUnprocessableEntity, "invalid_request", "Syntax error", 3 * time.Second},
	} {
		t0 := time.Now()
		rec := c.e.do(http.MethodPost, "/v1/journal/query", c.e.admin, map[string]string{"sql": c.sql})
		took := time.Since(t0)
		var body api.ErrorResponse
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != c.code || body.Error.Code != c.errCode || !strings.Contains(body.Error.Message, c.says) || took > c.within {
			t.Errorf("%s: %d %s after %v, want %d %s saying %q within %v", c.name, rec.Code, rec.Body, took, c.code, c.errCode, c.says, c.within)
		}
		if a := address.FindString(rec.Body.String()); a != "" {
			t.Errorf("%s: the answer names %q: %s", c.name, a, rec.Body)
		}
	}
}
