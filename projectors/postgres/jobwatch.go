package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The projector's notification channels: at each commit it names the jobs
// that commit ended, and the jobs it added steps to.
const (
	jobEndedChannel   = "vmplane_job_ended"
	jobSteppedChannel = "vmplane_job_stepped"
)

// maxNotifyPayload keeps each payload under Postgres' 8,000-byte limit.
const maxNotifyPayload = 7900

// queueJobNotifications adds to b one statement notifying the ended and
// the stepped jobs on their channels, space-separated and split to fit the
// payload limit (nothing when both are empty). Postgres delivers the
// notifications only when the transaction commits, so a listener that
// reads a named job then sees the committed row.
func queueJobNotifications(b *pgx.Batch, ended, stepped []string) {
	var args []any
	var sb strings.Builder
	add := func(channel string, ids []string) {
		flush := func() {
			if sb.Len() > 0 {
				args = append(args, channel, sb.String())
				sb.Reset()
			}
		}
		for _, id := range ids {
			if sb.Len()+1+len(id) > maxNotifyPayload {
				flush()
			}
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(id)
		}
		flush()
	}
	add(jobEndedChannel, ended)
	add(jobSteppedChannel, stepped)
	if len(args) == 0 {
		return
	}
	calls := make([]string, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		calls = append(calls, fmt.Sprintf("pg_notify($%d, $%d)", i, i+1))
	}
	b.Queue("SELECT "+strings.Join(calls, ", "), args...)
}

// JobWatch listens on one connection of its own for the projector's
// notifications and wakes whoever watches a named job: a long-poll answers
// as soon as the row it waits for has committed instead of at its next
// re-read. A watcher hears when its job ends and, if it asks, when the job
// gets steps. A notification only says "read again"; the row stays the truth,
// so one lost while the connection is down costs a waiter no more than its
// own re-read interval.
type JobWatch struct {
	dsn string
	log *slog.Logger

	mu       sync.Mutex
	watchers map[string]map[chan struct{}]bool // true: steps too
}

// NewJobWatch returns a JobWatch of the database at dsn; Run connects it.
func NewJobWatch(dsn string, log *slog.Logger) *JobWatch {
	if log == nil {
		log = slog.Default()
	}
	return &JobWatch{dsn: dsn, log: log, watchers: map[string]map[chan struct{}]bool{}}
}

// Watch returns a channel that receives when a commit ends job id (and,
// with steps, when one adds steps to it), and a function that stops
// watching. Watch before reading the row: a commit between the read and the
// watch is then not missed.
func (w *JobWatch) Watch(id string, steps bool) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	set := w.watchers[id]
	if set == nil {
		set = map[chan struct{}]bool{}
		w.watchers[id] = set
	}
	set[ch] = steps
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set := w.watchers[id]; set != nil {
			delete(set, ch)
			if len(set) == 0 {
				delete(w.watchers, id)
			}
		}
	}
}

// Run listens until ctx ends, reconnecting with backoff (100 ms to 5 s)
// when the connection fails. After a reconnect every watcher is woken,
// since notifications sent in between are lost.
func (w *JobWatch) Run(ctx context.Context) error {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		listened, err := w.listen(ctx)
		if ctx.Err() != nil {
			break
		}
		if listened {
			wait = 100 * time.Millisecond
		}
		w.log.Warn("job notifications: reconnecting", "in", wait, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
	return nil
}

// listen runs one connection: LISTEN, then deliver notifications until it
// fails. listened says whether LISTEN succeeded.
func (w *JobWatch) listen(ctx context.Context) (listened bool, err error) {
	conn, err := pgx.Connect(ctx, w.dsn)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+jobEndedChannel+"; LISTEN "+jobSteppedChannel); err != nil {
		return false, err
	}
	w.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		w.wake(n.Payload, n.Channel == jobSteppedChannel)
	}
}

// wake signals the watchers of each job named in payload; a payload of
// steps wakes only those that watch steps.
func (w *JobWatch) wake(payload string, stepped bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watchers) == 0 {
		return
	}
	for id := range strings.FieldsSeq(payload) {
		for ch, steps := range w.watchers[id] {
			if steps || !stepped {
				signal(ch)
			}
		}
	}
}

func (w *JobWatch) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.watchers {
		for ch := range set {
			signal(ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
