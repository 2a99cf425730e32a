package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The notification channels: at each commit the projector sends the rows of
// the jobs that commit ended, and the ids of the jobs it added steps to.
// Like the tables' names they are the database's, not this package's: the
// gateway's JobWatch (readmodel) listens on the same names, and
// TestJobWatchWakesAtCommit holds the two together.
const (
	jobEndedChannel   = "vmplane_job_ended"
	jobSteppedChannel = "vmplane_job_stepped"
)

// maxNotifyPayload keeps each payload under Postgres' 8,000-byte limit.
const maxNotifyPayload = 7900

// sqlNotifyEnded notifies each ended job with its row as the transaction
// leaves it (row_to_json: the columns by name), so that a long-poll answers
// from the notification instead of reading the row again. A row over the
// payload limit goes as its bare id, which only says "read again". It is
// queued after every write of the transaction, and planned for its ids
// (queueJoin): a generic plan made on a new, small jobs table would scan it.
const sqlNotifyEnded = `
SELECT pg_notify('` + jobEndedChannel + `', CASE WHEN octet_length(n.r) <= $2 THEN n.r ELSE n.id END)
FROM (SELECT j.id, row_to_json(j)::text AS r FROM jobs j JOIN unnest($1::text[]) AS e(id) ON j.id = e.id) n`

// queueJobNotifications adds to b the notifications of the ended jobs (one
// per job, with its row) and of the stepped ones (their ids, space-separated
// and split to fit the payload limit); nothing when both are empty.
// Postgres delivers them only when the transaction commits, so what a
// listener hears has committed.
func queueJobNotifications(b *pgx.Batch, ended, stepped []string) {
	if len(ended) > 0 {
		queueJoin(b, sqlNotifyEnded, ended, maxNotifyPayload)
	}
	var payloads []any
	var sb strings.Builder
	flush := func() {
		if sb.Len() > 0 {
			payloads = append(payloads, sb.String())
			sb.Reset()
		}
	}
	for _, id := range stepped {
		if sb.Len()+1+len(id) > maxNotifyPayload {
			flush()
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(id)
	}
	flush()
	if len(payloads) == 0 {
		return
	}
	calls := make([]string, len(payloads))
	for i := range payloads {
		calls[i] = fmt.Sprintf("pg_notify('%s', $%d)", jobSteppedChannel, i+1)
	}
	b.Queue("SELECT "+strings.Join(calls, ", "), payloads...)
}
