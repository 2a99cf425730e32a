package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
)

// A restored partition's state is what its last owner committed, and its
// inputs may hold records written before the state's timers came due
// that no one has read: an agent's answer, a power report, a ping. A
// timer fired at once decides without them — a job times out whose
// answer waits, a host goes Disconnected whose pings wait — after a
// hand-over, or after a restart with a backlog. So the timers of a
// partition restored (assigned, or read again after an aborted batch)
// are held until the loop's consume position on every input has reached
// the input's last stable offset listed when the partition was assigned,
// or the input was empty; its records are stepped meanwhile as they come,
// and other partitions' timers fire as ever. Then its timers fire as
// usual with the clock of that moment.
//
// The position is where the session's consumer stands: past the last
// record polled, transaction markers included (the session keeps control
// records for this; an input read transactionally ends with a marker, so
// the last data record's offset never reaches the end), or the group's
// committed offset before anything is polled. The listing runs in a
// goroutine of its own, so a broker slow to answer never holds the poll
// loop. A hold whose inputs make no progress for HoldStallAfter (the
// listing unanswered, the inputs not fetched, a tail the consumer never
// sees, such as a transaction a reloaded broker aborted without a marker)
// ends anyway, saying so: no timer waits for ever.

// HoldStallAfter is how long a hold waits without its inputs' positions
// moving before its timers fire anyway.
const HoldStallAfter = 30 * time.Second

// holds are the partitions whose timers are held. The poll loop owns m
// and seq; the listing goroutines hand their answers over through mu.
type holds struct {
	m   map[int32]*hold
	seq uint64
	// stallAfter is HoldStallAfter unless a test sets it.
	stallAfter time.Duration

	mu       sync.Mutex
	answered []listing
}

// hold is one partition's wait for its inputs.
type hold struct {
	id uint64 // the listing it waits for
	// since is when the loop first looked at the hold, its partition
	// restored: a long restore is no stall of the inputs. moved is the
	// last progress since: listed, or a position moved.
	since, moved time.Time
	// ends are the inputs' last stable offsets at the assignment, by
	// logical topic; nil until listed.
	ends map[string]int64
	// pos is the consume position reached on each input; progressed says
	// one moved since the loop last looked.
	pos        map[string]int64
	progressed bool
	// unlisted says the listing failed: the hold ends at the bound
	// counted from since, whatever its inputs do.
	unlisted bool
}

// listing is the answer of a listing of the inputs' end offsets.
type listing struct {
	id   uint64
	ends kadm.ListedOffsets
	err  error
}

// isHeld says whether a partition's timers are held.
func (h *holds) isHeld(part int32) bool { return len(h.m) > 0 && h.m[part] != nil }

// claimUnheld is claim for a partition whose timers are not held. An
// entry of a held partition is dropped; its key's timer goes back in the
// heap when the hold ends (releaseParts).
func (p *Processor[S]) claimUnheld(e timerEntry) bool { return !p.held.isHeld(e.part) && p.claim(e) }

// scheduledUnheld is scheduled for a partition whose timers are not held,
// so that a held timer neither fires nor shortens the poll.
func (p *Processor[S]) scheduledUnheld(e timerEntry) bool {
	return !p.held.isHeld(e.part) && p.scheduled(e)
}

// holdTimers holds the timers of partitions about to be restored and
// lists their inputs' end offsets through cl, in a goroutine that ends
// with ctx, with cl or after the stall bound.
func (p *Processor[S]) holdTimers(ctx context.Context, cl *kgo.Client, parts []int32) {
	h := &p.held
	if h.m == nil {
		h.m = map[int32]*hold{}
	}
	if h.stallAfter == 0 {
		h.stallAfter = HoldStallAfter
	}
	h.seq++
	id := h.seq
	for _, part := range parts {
		h.m[part] = &hold{id: id, pos: map[string]int64{}}
	}
	p.hooks.OnHold(parts, true, len(h.m))
	lctx, cancel := context.WithTimeout(ctx, h.stallAfter)
	stop := context.AfterFunc(cl.Context(), cancel)
	topics := p.cfg.Kafka.Topics(p.cfg.Inputs...)
	go func() {
		defer stop()
		defer cancel()
		ends, err := kafka.ListOffsets(lctx, kadm.NewClient(cl).ListCommittedOffsets, topics...)
		h.mu.Lock()
		h.answered = append(h.answered, listing{id: id, ends: ends, err: err})
		h.mu.Unlock()
	}()
}

// unhold ends the holds of partitions revoked or lost: their states and
// timers are gone.
func (p *Processor[S]) unhold(parts map[int32]bool) {
	var gone []int32
	for part := range parts {
		if p.held.isHeld(part) {
			delete(p.held.m, part)
			gone = append(gone, part)
		}
	}
	if len(gone) > 0 {
		p.hooks.OnHold(gone, false, len(p.held.m))
	}
}

// readPositions moves the held partitions' positions past the records
// polled and returns the records without the transaction markers, which
// are no input.
func (p *Processor[S]) readPositions(records []*kgo.Record) []*kgo.Record {
	out := records[:0]
	for _, kr := range records {
		if len(p.held.m) > 0 {
			if h := p.held.m[kr.Partition]; h != nil {
				h.reach(kr.Topic, kr.Offset+1)
			}
		}
		if !kr.Attrs.IsControl() {
			out = append(out, kr)
		}
	}
	clear(records[len(out):])
	return out
}

// reach moves the position on topic to at, if that is further. Only a
// move on an input not yet read to its end is progress: a busy input
// read past its end must not keep a hold on another input, stuck short
// of its end, from stalling.
func (h *hold) reach(topic string, at int64) {
	if at <= h.pos[topic] {
		return
	}
	end, listed := h.ends[topic]
	if h.ends == nil || listed && h.pos[topic] < end {
		h.progressed = true
	}
	h.pos[topic] = at
}

// releaseHeld ends the holds whose inputs are read to their ends, and
// those that have made no progress for the stall bound. cl is the
// session's client, whose committed offsets are a position before
// anything is polled.
func (p *Processor[S]) releaseHeld(cl *kgo.Client) {
	if len(p.held.m) == 0 {
		return
	}
	p.takeListings()
	var committed map[string]map[int32]kgo.EpochOffset
	var read, stalled []int32
	now := time.Now()
	for part, h := range p.held.m {
		if h.since.IsZero() {
			h.since, h.moved = now, now
		}
		if h.ends != nil {
			if committed == nil {
				committed = cl.CommittedOffsets()
			}
			for _, t := range p.cfg.Inputs {
				if o, ok := committed[p.cfg.Kafka.Topic(t)][part]; ok {
					h.reach(t, o.Offset)
				}
			}
			if h.readToEnd() {
				read = append(read, part)
				continue
			}
		}
		if h.progressed {
			h.moved, h.progressed = now, false
		}
		// A hold whose listing failed has no ends to reach: its records
		// are no progress towards them, and it ends at the bound.
		if h.unlisted && now.Sub(h.since) >= p.held.stallAfter || now.Sub(h.moved) >= p.held.stallAfter {
			stalled = append(stalled, part)
		}
	}
	if len(read) > 0 {
		slices.Sort(read)
		took := p.releaseParts(read)
		p.log.Info("timers released: inputs read to their ends", "partitions", read, "held", took.Round(time.Millisecond))
	}
	if len(stalled) > 0 {
		where := p.whereHeld(stalled)
		took := p.releaseParts(stalled)
		p.log.Warn("timers released: inputs not read to their ends", "partitions", stalled, "held", took.Round(time.Millisecond),
			"stalled", p.held.stallAfter, "at", where)
	}
}

// readToEnd says whether every input's position has reached its end; an
// input empty at the assignment has nothing to read.
func (h *hold) readToEnd() bool {
	for t, end := range h.ends {
		if end > 0 && h.pos[t] < end {
			return false
		}
	}
	return true
}

// takeListings gives the answered listings' end offsets to the holds
// that wait for them; an answer for a hold since ended or made again is
// stale. A listing that failed leaves its holds to the stall bound.
func (p *Processor[S]) takeListings() {
	p.held.mu.Lock()
	answered := p.held.answered
	p.held.answered = nil
	p.held.mu.Unlock()
	for _, l := range answered {
		var parts []int32
		for part, h := range p.held.m {
			if h.id == l.id {
				parts = append(parts, part)
			}
		}
		if len(parts) == 0 {
			continue
		}
		slices.Sort(parts)
		if l.err != nil {
			for _, part := range parts {
				p.held.m[part].unlisted = true
			}
			p.log.Warn("timers held: end offsets of inputs not listed", "partitions", parts, "err", l.err,
				"released_after", p.held.stallAfter)
			continue
		}
		for _, part := range parts {
			h := p.held.m[part]
			h.ends = map[string]int64{}
			for _, t := range p.cfg.Inputs {
				if o, ok := l.ends.Lookup(p.cfg.Kafka.Topic(t), part); ok {
					h.ends[t] = o.Offset
				}
			}
			h.moved = time.Now()
		}
		p.log.Info(fmt.Sprintf("timers of partitions %v held until inputs read to %s", parts, p.whereHeld(parts)))
	}
}

// whereHeld says, per input, each partition's position and end
// ("topic [part:pos/end ...]"; ? for an end not listed).
func (p *Processor[S]) whereHeld(parts []int32) string {
	slices.Sort(parts)
	var b strings.Builder
	for i, t := range p.cfg.Inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s [", t)
		for j, part := range parts {
			if j > 0 {
				b.WriteByte(' ')
			}
			h := p.held.m[part]
			end := "?"
			if e, ok := h.ends[t]; ok {
				end = fmt.Sprint(e)
			}
			fmt.Fprintf(&b, "%d:%d/%s", part, h.pos[t], end)
		}
		b.WriteByte(']')
	}
	return b.String()
}

// releaseParts ends the holds of parts and puts each of their keys'
// timers back in the heap; it returns how long the longest was held.
func (p *Processor[S]) releaseParts(parts []int32) time.Duration {
	var took time.Duration
	for _, part := range parts {
		took = max(took, time.Since(p.held.m[part].since))
		delete(p.held.m, part)
		if int(part) >= len(p.st.parts) {
			continue
		}
		for key, sl := range p.st.parts[part] {
			if sl.has() && sl.wake != 0 {
				p.timers.push(timerEntry{at: sl.wake, key: key, part: part})
			}
		}
	}
	p.hooks.OnHold(parts, false, len(p.held.m))
	return took
}

// forgetHolds drops every hold, between two sessions; a listing still
// out answers for none.
func (p *Processor[S]) forgetHolds() {
	if len(p.held.m) == 0 {
		return
	}
	parts := slices.Sorted(maps.Keys(p.held.m))
	clear(p.held.m)
	p.hooks.OnHold(parts, false, 0)
}
