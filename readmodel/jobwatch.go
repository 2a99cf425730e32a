package readmodel

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The channels the projector (projectors/postgres) notifies at each commit:
// the rows of the jobs the commit ended, and the ids of the jobs it added
// steps to. Like the tables' names they are the database's; the projector
// spells them too, and its TestJobWatchWakesAtCommit holds the two together.
const (
	jobEndedChannel   = "vmplane_job_ended"
	jobSteppedChannel = "vmplane_job_stepped"
)

// JobWatch listens on one connection of its own for the projector's
// notifications and tells whoever watches a named job: a long-poll answers
// as soon as the row it waits for has committed instead of at its next
// re-read. A watcher hears when its job ends, with the ended row, and, if it
// asks, when the job gets steps (nil: read the row again). A notification
// lost while the connection is down costs a waiter no more than its own
// re-read interval; so do the rows of a projector newer than the gateway,
// which an older JobWatch does not understand: upgrade gateways first for
// their long-polls to keep answering at the commit. Any role that connects
// to the database may LISTEN: the rows it would hear are the jobs table's.
type JobWatch struct {
	dsn string
	log *slog.Logger

	mu       sync.Mutex
	watchers map[string]map[chan *Job]bool // true: steps too
}

// NewJobWatch returns a JobWatch of the database at dsn; Run connects it.
func NewJobWatch(dsn string, log *slog.Logger) *JobWatch {
	if log == nil {
		log = slog.Default()
	}
	return &JobWatch{dsn: dsn, log: log, watchers: map[string]map[chan *Job]bool{}}
}

// Watch returns a channel that receives when a commit ends job id (and,
// with steps, when one adds steps to it), and a function that stops
// watching. What it receives is the job's committed row when a commit ended
// the job and the row fitted in the notification, else nil: read the row
// again. Rows are shared between watchers: read them, never change them.
// Watch before reading the row: a commit between the read and the watch is
// then not missed.
func (w *JobWatch) Watch(id string, steps bool) (<-chan *Job, func()) {
	ch := make(chan *Job, 1)
	w.mu.Lock()
	set := w.watchers[id]
	if set == nil {
		set = map[chan *Job]bool{}
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
		w.notified(n.Channel, n.Payload)
	}
}

// notified tells the watchers of the jobs a notification names: an ended
// job's row goes to all its watchers, the ids of stepped jobs only wake
// those that watch steps, and a bare id (a row too large) wakes all of the
// job's watchers to read again.
func (w *JobWatch) notified(channel, payload string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watchers) == 0 {
		return
	}
	if channel == jobEndedChannel && strings.HasPrefix(payload, "{") {
		var j Job
		err := json.Unmarshal([]byte(payload), &j)
		if err == nil && j.ID != "" {
			for ch := range w.watchers[j.ID] {
				tell(ch, &j)
			}
			return
		}
		// Not a row this JobWatch understands: the job's watchers, or all
		// when even the id is unreadable, read again.
		var named struct {
			ID string `json:"id"`
		}
		idErr := json.Unmarshal([]byte(payload), &named)
		w.log.Warn("ended job's row not understood: its watchers read it again", "job", named.ID, "err", err, "bytes", len(payload))
		if idErr != nil || named.ID == "" {
			w.wakeAllLocked()
			return
		}
		payload = named.ID
	}
	stepped := channel == jobSteppedChannel
	for id := range strings.FieldsSeq(payload) {
		for ch, steps := range w.watchers[id] {
			if steps || !stepped {
				tell(ch, nil)
			}
		}
	}
}

func (w *JobWatch) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wakeAllLocked()
}

func (w *JobWatch) wakeAllLocked() {
	for _, set := range w.watchers {
		for ch := range set {
			tell(ch, nil)
		}
	}
}

// tell leaves j (nil: read again) for the watcher of ch. A row replaces
// whatever waits there; a nil finds the watcher woken already when
// something waits.
func tell(ch chan *Job, j *Job) {
	select {
	case ch <- j:
		return
	default:
	}
	if j == nil {
		return
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- j:
	default:
	}
}
