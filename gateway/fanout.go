package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/schemas"
)

// Event is one record of vm.events.v1 as the streams send it (api.Event)
// and what the fanout needs to route it. An event made by EventOf has its
// Data only in its rendering.
type Event struct {
	api.Event
	Account string `json:"-"`

	partition int32
	offset    int64
	// body is the rendering of an event made by EventOf, shared by its
	// copies in the ring and the streams' queues.
	body *body
}

// body renders an event at most once, when a stream first sends it: most
// events only pass through the ring, and rendering each as it was consumed
// was three quarters of the fanout's CPU. Until then it holds the decoded
// record value (one struct, not Data's boxed values, which every
// collection would walk); after, only the bytes.
type body struct {
	once  sync.Once
	value any
	json  []byte
}

// final says whether the event ends its job.
func (e Event) final() bool {
	switch e.Type {
	case "JobSucceeded", "JobFailed", "JobCancelled", "JobRejected":
		return true
	}
	return false
}

// Fanout hands each event of vm.events.v1 to the subscribers whose filter
// accepts it. It keeps the last events in a ring, so that a client
// reconnecting with Last-Event-ID misses nothing that the ring still
// holds, and a job stream joins its snapshot to the events after it
// (join.go). Its events come from Run (feed.go), which consumes only while
// a stream is open, or from Publish.
type Fanout struct {
	log *slog.Logger

	mu   sync.Mutex
	subs map[*subscription]struct{}
	ring []Event
	next int // ring write position
	full bool
	// from is where the ring's hold begins: it has every event of each
	// partition at or after from (0 when absent), from the feed's start
	// positions on, raised past each event it drops.
	from position
	// owners remembers each VM's account: PowerStateObserved does not
	// carry it, and a user's stream must not see another's VMs.
	owners map[string]string

	// The feed's state (feed.go), under mu.
	fed    bool               // Run is feeding the fanout
	demand chan struct{}      // wakes Run: a stream waits for the feed
	ready  chan struct{}      // closed once the running feed has its start offsets
	gen    uint64             // the running feed's; a stopped feed's events are dropped
	stop   context.CancelFunc // stops the running feed; nil when none runs
	idle   *time.Timer        // stops the feed when no stream is open for grace
	grace  time.Duration      // feedGrace
	wait   time.Duration      // feedWait
	// ownerPause: no owner lookups until then (one failed).
	ownerPause time.Time
}

// NewFanout returns a fanout that remembers the last ringSize events.
func NewFanout(log *slog.Logger, ringSize int) *Fanout {
	if ringSize <= 0 {
		ringSize = 10_000
	}
	return &Fanout{log: log, subs: map[*subscription]struct{}{}, ring: make([]Event, ringSize), from: position{},
		owners: map[string]string{}, demand: make(chan struct{}, 1), ready: make(chan struct{}), grace: feedGrace, wait: feedWait}
}

// eventOf turns a decoded record into an Event; it reads only the fields
// the streams filter on, and leaves the rest to the rendering.
func eventOf(rec schemas.Record) Event {
	// The VM is the record's, not its key's: a host's alerts and
	// maintenance job and a lease's end job are keyed by their host or
	// lease and are no VM's.
	return Event{
		Event: api.Event{
			ID:   strconv.Itoa(int(rec.Partition)) + ":" + strconv.FormatInt(rec.Offset, 10),
			Type: schemas.TypeName(rec.Value), VmID: stringField(rec.Value, "vm_id"), JobID: stringField(rec.Value, "job_id"),
		},
		Account:   stringField(rec.Value, "account"),
		partition: rec.Partition, offset: rec.Offset,
		body: &body{value: rec.Value},
	}
}

// avroFields renders a schemas value with its Avro field names (the names
// of the contract), flattening embedded structs such as JobRef.
func avroFields(v any) map[string]any {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() != reflect.Struct {
		return map[string]any{}
	}
	fields := avroIndex(rv.Type())
	out := make(map[string]any, len(fields))
	for name, idx := range fields {
		out[name] = rv.FieldByIndex(idx).Interface()
	}
	return out
}

// stringField is the string field of v with Avro name name, or "".
func stringField(v any, name string) string {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() != reflect.Struct {
		return ""
	}
	idx, ok := avroIndex(rv.Type())[name]
	if !ok {
		return ""
	}
	if f := rv.FieldByIndex(idx); f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}

// avroIndexes caches avroIndex per struct type.
var avroIndexes sync.Map // reflect.Type → map[string][]int

// avroIndex maps the Avro name of each exported field of struct type t,
// embedded structs flattened, to its index for FieldByIndex.
func avroIndex(t reflect.Type) map[string][]int {
	if m, ok := avroIndexes.Load(t); ok {
		return m.(map[string][]int)
	}
	m := map[string][]int{}
	var walk func(reflect.Type, []int)
	walk = func(t reflect.Type, at []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			idx := append(append([]int(nil), at...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("avro"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			m[name] = idx
		}
	}
	walk(t, nil)
	avroIndexes.Store(t, m)
	return m
}

// Publish stores e in the ring and offers it to every subscriber whose
// filter takes it. A subscriber more than maxQueued events behind is
// dropped: its client resumes with Last-Event-ID.
func (f *Fanout) Publish(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.publishLocked(e)
}

func (f *Fanout) publishLocked(e Event) {
	switch {
	case e.VmID == "":
	case e.Account != "":
		f.owners[e.VmID] = e.Account
	default:
		e.Account = f.owners[e.VmID]
	}
	if e.Type == "VmExpunged" {
		delete(f.owners, e.VmID)
	}
	if old := f.ring[f.next]; f.full && old.offset >= f.from[old.partition] {
		f.from[old.partition] = old.offset + 1
	}
	f.ring[f.next] = e
	f.next = (f.next + 1) % len(f.ring)
	if f.next == 0 {
		f.full = true
	}
	for s := range f.subs {
		if !s.filter(e) {
			continue
		}
		if !s.push(e) {
			f.leaveLocked(s)
		}
	}
}

// maxQueued is how far a stream may fall behind before it is dropped:
// about a second of a stream of every event at 1,000 actions/s. The queue
// holds only what waits, so an idle or keeping-up stream costs nothing.
const maxQueued = 4096

// subscription is one stream's view of the fanout: the events waiting to
// be written, and a wake-up when there are some.
type subscription struct {
	f      *Fanout
	filter func(Event) bool
	wake   chan struct{}

	mu     sync.Mutex
	queue  []Event
	behind bool // dropped for falling behind
}

// push queues e; false when the stream is too far behind (it is dropped).
func (s *subscription) push(e Event) bool {
	s.mu.Lock()
	ok := len(s.queue) < maxQueued
	if ok {
		s.queue = append(s.queue, e)
	} else {
		s.behind = true
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return ok
}

// take moves the waiting events into dst (reused) and says whether the
// stream was dropped for falling behind.
func (s *subscription) take(dst []Event) ([]Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst = append(dst[:0], s.queue...)
	clear(s.queue)
	if cap(s.queue) > 256 {
		s.queue = nil // a burst's buffer goes with the burst
	} else {
		s.queue = s.queue[:0]
	}
	return dst, s.behind
}

// Close unsubscribes.
func (s *subscription) Close() {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.leaveLocked(s)
}

// leaveLocked unsubscribes s; the last stream to leave starts the feed's
// grace period.
func (f *Fanout) leaveLocked(s *subscription) {
	delete(f.subs, s)
	if len(f.subs) == 0 {
		f.idleLocked()
	}
}

// Subscribe registers filter and returns, atomically with the registration
// (nothing lost, nothing twice), the ring's events after lastID that the
// filter takes. lastID "" means live events only. When lastID is no longer
// in the ring, the backlog is what the ring holds of lastID's partition
// after its offset, and gap reports that older events may be missing.
//
// While the feed is idle, Subscribe starts it and returns once it knows
// where it starts, so that every event committed after Subscribe returns
// reaches the subscription; it fails when the feed cannot start within
// feedWait, or when ctx ends first.
func (f *Fanout) Subscribe(ctx context.Context, filter func(Event) bool, lastID string) (sub *subscription, backlog []Event, gap bool, err error) {
	f.mu.Lock()
	sub, starting := f.registerLocked(filter)
	if starting != nil {
		f.mu.Unlock()
		gap, err = f.await(ctx, sub, starting, lastID)
		return sub, nil, gap, err
	}
	defer f.mu.Unlock()
	if lastID == "" {
		return sub, nil, false, nil
	}
	p, o, ok := parseEventID(lastID)
	if !ok {
		return sub, nil, true, nil
	}
	ordered := f.ordered()
	start := -1
	for i, e := range ordered {
		if e.partition == p && e.offset == o {
			start = i + 1
			break
		}
	}
	for i, e := range ordered {
		if e.ID == "" || !filter(e) {
			continue
		}
		if start >= 0 && i >= start || start < 0 && e.partition == p && e.offset > o {
			backlog = append(backlog, e)
		}
	}
	if start < 0 {
		gap = len(ordered) == 0 || ordered[0].partition != p || ordered[0].offset > o+1
	}
	return sub, backlog, gap, nil
}

// registerLocked adds a subscription of filter. While the feed is being
// started, it returns the channel that closes once the feed has its start
// positions: the subscription then waits for it (await).
func (f *Fanout) registerLocked(filter func(Event) bool) (sub *subscription, starting <-chan struct{}) {
	sub = &subscription{f: f, filter: filter, wake: make(chan struct{}, 1)}
	f.subs[sub] = struct{}{}
	if f.idle != nil {
		f.idle.Stop()
		f.idle = nil
	}
	if f.fed && !closed(f.ready) {
		return sub, f.ready
	}
	return sub, nil
}

// subscribeAll registers filter and returns, atomically with the
// registration, every event of the ring that filter takes, and cover:
// the backlog and the events the subscription receives after it hold
// every event of each partition at or after cover. A job stream joins a
// snapshot of the read model to them by position (join.go).
//
// While the feed is idle it starts it, as Subscribe does; the feed then
// starts after the registration and every event it publishes reaches the
// subscription's queue: there is no backlog, and cover is where the feed
// started (or later, past the events the ring has dropped since).
func (f *Fanout) subscribeAll(ctx context.Context, filter func(Event) bool) (sub *subscription, backlog []Event, cover position, err error) {
	f.mu.Lock()
	sub, starting := f.registerLocked(filter)
	if starting != nil {
		f.mu.Unlock()
		if _, err := f.await(ctx, sub, starting, ""); err != nil {
			return nil, nil, nil, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return sub, nil, maps.Clone(f.from), nil
	}
	defer f.mu.Unlock()
	for _, e := range f.ordered() {
		if e.ID != "" && filter(e) {
			backlog = append(backlog, e)
		}
	}
	return sub, backlog, maps.Clone(f.from), nil
}

// ordered returns the ring oldest first.
func (f *Fanout) ordered() []Event {
	if !f.full {
		return f.ring[:f.next]
	}
	return append(append([]Event(nil), f.ring[f.next:]...), f.ring[:f.next]...)
}

func parseEventID(id string) (int32, int64, bool) {
	ps, os, ok := strings.Cut(id, ":")
	if !ok {
		return 0, 0, false
	}
	p, err1 := strconv.ParseInt(ps, 10, 32)
	o, err2 := strconv.ParseInt(os, 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 {
		return 0, 0, false
	}
	return int32(p), o, true
}

// marshal renders e for an SSE data line.
func (e Event) marshal() []byte {
	b := e.body
	if b == nil {
		return e.render()
	}
	b.once.Do(func() {
		e.Data, e.body = avroFields(b.value), nil
		b.json, b.value = e.render(), nil
	})
	return b.json
}

func (e Event) render() []byte {
	b, err := json.Marshal(e.Event)
	if err != nil {
		// Every field is a string, number, bool or slice of them.
		return []byte(`{"id":"` + e.ID + `","type":"` + e.Type + `"}`)
	}
	return b
}

// EventOf is eventOf for tests and tools that feed a Fanout directly.
func EventOf(rec schemas.Record) Event { return eventOf(rec) }
