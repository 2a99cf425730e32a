package crashloop

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// readModelTables are the tables the Postgres projector writes, compared
// row for row (consumer_offsets is invariant 4's).
var readModelTables = []string{"vms", "jobs", "job_steps", "hosts", "allocations", "host_reservations", "offerings",
	"accounts", "api_keys", "alerts", "leases", "lease_reservations", "lease_events"}

// dumpTables reads every row of the tables as text, sorted, in one
// snapshot.
func dumpTables(ctx context.Context, dsn string) (map[string][]string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	out := map[string][]string{}
	for _, table := range readModelTables {
		rows, err := tx.Query(ctx, fmt.Sprintf("SELECT t::text FROM %s t ORDER BY 1", pgx.Identifier{table}.Sanitize()))
		if err != nil {
			return nil, fmt.Errorf("dump %s: %w", table, err)
		}
		if out[table], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, fmt.Errorf("dump %s: %w", table, err)
		}
	}
	return out, nil
}

// checkReadModel is invariant 5: the live read model equals a rebuild of
// it from the log, row for row. The processors are stopped (SIGSTOP) while
// the live projector reaches the last stable offsets, its tables are read
// and `vmplane projector rebuild` replays the log into a second database,
// so that both stand at the same offsets; they continue afterwards.
func checkReadModel(ctx context.Context, st *stack, dsn, rebuildDSN string) result {
	r := result{name: "5 Postgres read model equals a rebuild from the log, row for row"}
	var procs []string
	for _, n := range st.roleNames() {
		if strings.HasPrefix(n, "processor-") {
			procs = append(procs, n)
		}
	}
	if err := st.freeze(procs, true); err != nil {
		r.failf("stop the processors: %v", err)
	}
	frozen := true
	thaw := func() {
		if frozen {
			frozen = false
			if err := st.freeze(procs, false); err != nil {
				r.failf("continue the processors: %v", err)
			}
		}
	}
	defer thaw()

	// The live projector first reaches the log's end.
	lso, err := lastStable(ctx, st.admin, postgres.Topics...)
	if err != nil {
		r.failf("list last stable offsets: %v", err)
		return r
	}
	var short []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		stored, err := storedPositions(ctx, dsn)
		if err != nil {
			r.failf("%v", err)
			return r
		}
		short = short[:0]
		from := map[tp]int64{}
		for p, end := range lso {
			if at := stored[p]; at < end {
				from[p] = at
			}
		}
		if len(from) > 0 {
			offsets, err := committedOffsets(ctx, st, from, lso)
			for p, at := range from {
				if err != nil || len(offsets[p]) > 0 {
					short = append(short, fmt.Sprintf("%s at %d of %d (%d records, %v)", p, at, lso[p], len(offsets[p]), err))
				}
			}
		}
		if len(short) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if len(short) > 0 {
		sort.Strings(short)
		r.failf("the live projector did not reach the log's end in 30 s: %s", strings.Join(short, "; "))
	}
	live, err := dumpTables(ctx, dsn)
	if err != nil {
		r.failf("read the live read model: %v", err)
		return r
	}
	began := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, st.cfg.bin, "projector", "rebuild", "--target", "postgres", "--brokers", st.brokerAddr, "--pg-dsn", rebuildDSN)
	cmd.Env = roleEnv()
	out, err := cmd.CombinedOutput()
	took := time.Since(began)
	thaw()
	if err != nil {
		r.failf("vmplane projector rebuild: %v\n%s", err, tailText(string(out), 10))
		return r
	}
	rebuilt, err := dumpTables(ctx, rebuildDSN)
	if err != nil {
		r.failf("read the rebuilt read model: %v", err)
		return r
	}
	var rows, rebuiltRows int
	var differ []string
	for _, table := range readModelTables {
		a, b := live[table], rebuilt[table]
		rows += len(a)
		rebuiltRows += len(b)
		onlyLive, onlyRebuilt := diff(a, b)
		if len(onlyLive)+len(onlyRebuilt) == 0 {
			continue
		}
		differ = append(differ, table)
		r.failf("table %s: live %d rows, rebuilt %d; only live %d %s; only rebuilt %d %s", table, len(a), len(b),
			len(onlyLive), sample(onlyLive), len(onlyRebuilt), sample(onlyRebuilt))
	}
	r.summary = fmt.Sprintf("tables %d, rows live %d, rebuilt %d (rebuild took %s); tables that differ %d %v",
		len(readModelTables), rows, rebuiltRows, took.Round(time.Millisecond), len(differ), differ)
	return r
}

// diff returns the rows of sorted a not in sorted b and those of b not in
// a, as multisets.
func diff(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}

func sample(rows []string) string {
	if len(rows) == 0 {
		return ""
	}
	n := min(len(rows), 3)
	parts := make([]string, n)
	for i := range n {
		parts[i] = oneLine(rows[i], 400)
	}
	return "e.g. " + strings.Join(parts, " | ")
}

func tailText(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkJournal is invariant 6: ClickHouse's job_journal, read FINAL, has
// each job's end once, and the same end as vm.events.v1.
func checkJournal(ctx context.Context, chAddr, chDB string, l *jobLog, acc []accepted) result {
	r := result{name: "6 ClickHouse job_journal has each job's end exactly once (FINAL)"}
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{chAddr}, Protocol: clickhouse.Native})
	if err != nil {
		r.failf("open clickhouse: %v", err)
		return r
	}
	defer conn.Close()
	q := fmt.Sprintf("SELECT job_id, kind, count() FROM %s.job_journal FINAL WHERE kind IN ('succeeded', 'failed', 'cancelled', 'rejected') GROUP BY job_id, kind",
		chserver.QuoteIdent(chDB))
	rows, err := conn.Query(ctx, q)
	if err != nil {
		r.failf("%s: %v", q, err)
		return r
	}
	defer rows.Close()
	ends := map[string][]string{}
	var total int
	for rows.Next() {
		var id, kind string
		var n uint64
		if err := rows.Scan(&id, &kind, &n); err != nil {
			r.failf("scan: %v", err)
			return r
		}
		for range n {
			ends[id] = append(ends[id], kind)
			total++
		}
	}
	if err := rows.Err(); err != nil {
		r.failf("rows: %v", err)
		return r
	}
	var once, missing, twice, mismatch int
	for _, a := range acc {
		got := ends[a.id]
		switch {
		case len(got) == 0:
			missing++
			r.failf("job %s (%s of VM %s): no end row in job_journal", a.id, a.kind, a.vmID)
		case len(got) > 1:
			twice++
			r.failf("job %s (%s of VM %s): %d end rows %v", a.id, a.kind, a.vmID, len(got), got)
		default:
			once++
			if j := l.jobs[a.id]; j != nil && len(j.endKinds) == 1 && j.endKinds[0] != got[0] {
				mismatch++
				r.failf("job %s: job_journal says %s, vm.events.v1 %s", a.id, got[0], j.endKinds[0])
			}
		}
	}
	var otherTwice int
	mine := accSet(acc)
	for id, got := range ends {
		if len(got) > 1 && !mine[id] {
			otherTwice++
			r.failf("job %s (not from this load's 202s): %d end rows %v", id, len(got), got)
		}
	}
	r.summary = fmt.Sprintf("end rows %d for %d jobs; of the 202s %d: once %d, none %d, more than once %d, end unlike vm.events.v1 %d; other jobs with more than one end %d",
		total, len(ends), len(acc), once, missing, twice, mismatch, otherTwice)
	return r
}

func accSet(acc []accepted) map[string]bool {
	m := make(map[string]bool, len(acc))
	for _, a := range acc {
		m[a.id] = true
	}
	return m
}
