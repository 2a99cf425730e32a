package journal

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vmplane/vmplane/benchmarks/fleet"
	pj "github.com/vmplane/vmplane/projectors/journal"
)

// analystQuery is query 2 of docs/analytics.md ("p50, p95 and average
// duration by action and day"); %s is the database.
const analystQuery = `SELECT day, job_type, count() AS jobs,
       quantiles(0.5, 0.95)(duration_ms) AS p50_p95_ms,
       round(avg(duration_ms)) AS avg_ms
FROM %s.job_ends
WHERE outcome = 'succeeded'
GROUP BY day, job_type
ORDER BY day DESC, job_type`

// loadJournal fills db.job_journal with rows rows or a few more (whole jobs) of history's jobs
// through one clickhouse-client INSERT ... FORMAT TabSeparated, the rows
// rendered as the projector renders them (pj.AppendJobJournalTSV) and
// streamed to the client's stdin while it inserts. The materialized views
// fill job_runs, job_ends and job_daily as they do for the projector's inserts.
func loadJournal(ctx context.Context, s *server, db string, history fleet.History, rows int) (jobs int, err error) {
	pr, pw := io.Pipe()
	cmd := s.clientCmd(ctx, fmt.Sprintf("INSERT INTO `%s`.job_journal (%s) FORMAT TabSeparated", db, pj.JobJournalColumns), pr)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var buf []byte
	written := 0
	for written < rows && err == nil {
		// A job makes about 4 journal rows: a chunk never overshoots by much.
		chunk := min(20_000, (rows-written)/4+1)
		var n int
		buf, n, err = pj.AppendJobJournalTSV(buf[:0], history.Records(jobs, jobs+chunk))
		jobs += chunk
		written += n
		if err == nil {
			_, err = pw.Write(buf)
		}
	}
	pw.CloseWithError(err)
	if werr := cmd.Wait(); werr != nil && err == nil {
		err = fmt.Errorf("clickhouse-client insert into job_journal: %v: %s", werr, errb.String())
	}
	if err != nil {
		return jobs, err
	}
	n, err := s.count(ctx, db, "job_journal")
	if err == nil && n != uint64(written) {
		err = fmt.Errorf("job_journal holds %d rows, %d loaded", n, written)
	}
	return jobs, err
}

// queryOnce runs the analyst query once and reads every row of its answer;
// it returns the wall clock from sending the query to the last row, and the
// number of rows.
func queryOnce(ctx context.Context, s *server, db string) (time.Duration, int, error) {
	start := time.Now()
	rs, err := s.conn.Query(ctx, fmt.Sprintf(analystQuery, "`"+db+"`"))
	if err != nil {
		return 0, 0, err
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		n++
	}
	if err := rs.Err(); err != nil {
		return 0, n, err
	}
	return time.Since(start), n, nil
}
