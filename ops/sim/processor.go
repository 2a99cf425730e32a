package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/schemas"
)

// proc is a simulated processor, whatever its machine.
type proc interface {
	name() string
	// batch runs one poll-and-transaction round: up to max records from
	// the owned input partitions, then the due timers. It reports whether
	// there was anything to do; abort throws the transaction away.
	batch(w *world, max int, abort bool) bool
	// pending says whether a batch would find records or due timers.
	pending(w *world) bool
	// crash loses everything in memory; restore reads the changelog and
	// the committed offsets again, as a restarted process does.
	crash()
	restore(w *world)
	up() bool
}

// machineProc drives one machine as processors/engine does: the same
// inputs, changelog and consumer group, each batch one transaction of
// outputs, changed states and offsets. Its state is what Step returned,
// kept in memory between batches, and rebuilt from the changelog after a
// crash or an aborted transaction, never from anything else.
type machineProc[S any] struct {
	group     string
	m         engine.Machine[S]
	inputs    []string
	changelog string

	// watch, when set, sees a key's state before each Step and returns
	// the check of that Step's outputs: invariants about one decision,
	// against the state it was taken on.
	watch func(w *world, s S) func(outs []schemas.Record)

	running bool
	state   map[string]S
	part    map[string]int32 // the partition each key's state lives in
	pos     map[tp]int64     // next offset to read
	// wake is the earliest wake time of any key, zero for none: states
	// change only in batch and restore, which compute it again, so a
	// step that asks whether timers are due costs no scan.
	wake time.Time
	// readyAt is the sum of the input topics' versions when ready was
	// last listed, and readyList that list; a batch or a restore clears
	// it.
	readyAt   uint64
	readyList []tp
	readyOK   bool
}

func newMachineProc[S any](group string, m engine.Machine[S], changelog string, inputs ...string) *machineProc[S] {
	return &machineProc[S]{group: group, m: m, inputs: inputs, changelog: changelog}
}

func (p *machineProc[S]) name() string { return p.group }
func (p *machineProc[S]) up() bool     { return p.running }

func (p *machineProc[S]) crash() {
	p.running = false
	p.state, p.part, p.pos = nil, nil, nil
}

func (p *machineProc[S]) restore(w *world) {
	p.state, p.part, p.pos = map[string]S{}, map[string]int32{}, map[tp]int64{}
	p.readyOK = false
	// The latest record of each key is its state (what compaction would
	// keep): read from the end, each key once.
	for part := range w.log.partitions(p.changelog) {
		at := tp{p.changelog, part}
		seen := map[string]bool{}
		for o := w.log.end(at) - 1; o >= 0; o-- {
			e, _ := w.log.read(at, o)
			if seen[e.key] {
				continue
			}
			seen[e.key] = true
			if e.value == nil {
				continue
			}
			s, err := decodeState[S](e.value)
			if err != nil {
				w.fail("restore %s: %s/%d@%d: %v", p.group, p.changelog, part, o, err)
				return
			}
			p.state[e.key], p.part[e.key] = s, part
		}
	}
	for _, t := range p.inputs {
		for part := range w.log.partitions(t) {
			at := tp{t, part}
			p.pos[at] = w.log.committed(p.group, at)
		}
	}
	p.configure(w)
	p.rewake()
	p.running = true
}

// configure hands the machine the settings.v1 records it has not read, as
// the engine does: all of them on a restore, before anything is stepped,
// then the new ones before each batch. A Configurable machine keeps the
// latest value per scope and name, so reading from the start again after
// a crash leaves it as it was.
func (p *machineProc[S]) configure(w *world) {
	c, ok := any(p.m).(engine.Configurable)
	if !ok {
		return
	}
	for part := range w.log.partitions(schemas.TopicSettings) {
		at := tp{schemas.TopicSettings, part}
		for o := p.pos[at]; o < w.log.end(at); o++ {
			e, _ := w.log.read(at, o)
			v, err := schemas.Unmarshal(e.value)
			sc, ok := v.(*schemas.SettingChanged)
			if err == nil && !ok {
				err = fmt.Errorf("a %T is no setting", v)
			}
			if err == nil {
				err = c.Configure(sc)
			}
			if err != nil {
				w.trace("%s dead letter %s/%d@%d: %v", p.group, at.topic, at.part, o, err)
				w.deadLetters++
				continue
			}
			w.trace("%s setting %s = %q", p.group, e.key, sc.Value)
		}
		p.pos[at] = w.log.end(at)
	}
}

func decodeState[S any](b []byte) (S, error) {
	var zero S
	v, err := schemas.Unmarshal(b)
	if err != nil {
		return zero, err
	}
	s, ok := v.(S)
	if !ok {
		return zero, fmt.Errorf("state is %T, want %T", v, zero)
	}
	return s, nil
}

// ready lists the input partitions with a record to read, in a fixed
// order. The list is kept until an input topic grows or the positions
// move.
func (p *machineProc[S]) ready(w *world) []tp {
	var v uint64
	for _, t := range p.inputs {
		v += w.log.version(t)
	}
	if p.readyOK && v == p.readyAt {
		return p.readyList
	}
	out := p.readyList[:0]
	for _, t := range p.inputs {
		for part := range w.log.partitions(t) {
			at := tp{t, part}
			if p.pos[at] < w.log.end(at) {
				out = append(out, at)
			}
		}
	}
	p.readyList, p.readyAt, p.readyOK = out, v, true
	return out
}

// rewake computes the earliest wake time of the states.
func (p *machineProc[S]) rewake() {
	p.wake = time.Time{}
	for _, s := range p.state {
		if wk := p.m.Wake(s); !wk.IsZero() && (p.wake.IsZero() || wk.Before(p.wake)) {
			p.wake = wk
		}
	}
}

// due lists the keys whose wake time has come, sorted.
func (p *machineProc[S]) due(now time.Time) []string {
	if p.wake.IsZero() || p.wake.After(now) {
		return nil
	}
	var out []string
	for k, s := range p.state {
		if wk := p.m.Wake(s); !wk.IsZero() && !wk.After(now) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (p *machineProc[S]) pending(w *world) bool {
	return p.running && (len(p.ready(w)) > 0 || len(p.due(w.now)) > 0)
}

func (p *machineProc[S]) batch(w *world, max int, abort bool) bool {
	if !p.running {
		return false
	}
	p.configure(w)
	due := p.due(w.now)
	ready := slices.Clone(p.ready(w))
	if len(ready) == 0 && len(due) == 0 {
		return false
	}
	p.readyOK = false // the positions move
	tx := &txn{group: p.group, offsets: map[tp]int64{}}
	touched := map[string]bool{}
	// Records of different partitions interleave at random, as fetches
	// do; each partition's come in order.
	for n := 0; n < max && len(ready) > 0; n++ {
		i := w.rng.IntN(len(ready))
		at := ready[i]
		o := p.pos[at]
		e, _ := w.log.read(at, o)
		p.pos[at] = o + 1
		tx.offsets[at] = o + 1
		if p.pos[at] >= w.log.end(at) {
			ready = slices.Delete(ready, i, i+1)
		}
		p.step(w, tx, at, o, e, touched)
	}
	for _, k := range due {
		s, ok := p.state[k]
		if !ok {
			continue
		}
		if wk := p.m.Wake(s); wk.IsZero() || wk.After(w.now) {
			continue // a step of this batch moved it
		}
		ns, outs := p.m.Tick(s, k, w.now)
		w.trace("%s tick %s → %s", p.group, k, summary(outs))
		for _, o := range outs {
			w.detail("out", o.Value)
		}
		p.set(k, p.partOf(w, k), ns, touched)
		p.emit(w, tx, outs, nil)
	}
	for _, k := range slices.Sorted(maps.Keys(touched)) {
		at := tp{p.changelog, p.partOf(w, k)}
		s, ok := p.state[k]
		if !ok {
			tx.records = append(tx.records, txnRecord{at, entry{key: k, at: w.ms()}})
			delete(p.part, k)
			continue
		}
		b, err := schemas.Marshal(s)
		if err != nil {
			w.fail("%s: encode state of %s: %v", p.group, k, err)
			return true
		}
		tx.records = append(tx.records, txnRecord{at, entry{key: k, value: b, at: w.ms()}})
	}
	if abort {
		// The transaction is thrown away: the states in memory ran ahead
		// of the log, so they are read again, as the engine does.
		w.trace("%s abort (%d records)", p.group, len(tx.records))
		p.restore(w)
		return true
	}
	w.log.commit(tx)
	p.rewake()
	return true
}

// step applies one consumed record. A record that does not decode is a
// dead letter, as in the engine.
func (p *machineProc[S]) step(w *world, tx *txn, at tp, o int64, e entry, touched map[string]bool) {
	v, err := schemas.Unmarshal(e.value)
	if err != nil {
		w.trace("%s dead letter %s/%d@%d: %v", p.group, at.topic, at.part, o, err)
		w.deadLetters++
		return
	}
	in := schemas.Record{Topic: at.topic, Key: e.key, Value: v, Headers: e.headers, Partition: at.part, Offset: o, TimestampMs: e.at}
	s := p.state[e.key]
	var checkOuts func([]schemas.Record)
	if p.watch != nil {
		checkOuts = p.watch(w, s)
	}
	ns, outs := p.m.Step(s, in, w.now)
	if checkOuts != nil {
		checkOuts(outs)
	}
	w.trace("%s %s %s → %s", p.group, typeName{v}, e.key, summary(outs))
	w.detail("in", v)
	for _, o := range outs {
		w.detail("out", o.Value)
	}
	if _, had := p.part[e.key]; !had {
		p.part[e.key] = at.part
	}
	p.set(e.key, p.part[e.key], ns, touched)
	p.emit(w, tx, outs, e.headers)
}

// partOf is the partition a key's state lives in: where its input came
// from, or, for a key only a timer touches, where it was restored from.
func (p *machineProc[S]) partOf(w *world, k string) int32 {
	if part, ok := p.part[k]; ok {
		return part
	}
	return w.log.partitionOf(p.changelog, k)
}

// set keeps a key's new state; a nil state deletes it.
func (p *machineProc[S]) set(k string, part int32, s S, touched map[string]bool) {
	touched[k] = true
	if engine.NoState(s) {
		delete(p.state, k)
		return
	}
	p.state[k] = s
	p.part[k] = part
}

// emit adds a Step's outputs to the transaction, with the headers that
// follow a job carried over from the input, as the engine does.
func (p *machineProc[S]) emit(w *world, tx *txn, outs []schemas.Record, from map[string]string) {
	for _, o := range outs {
		h := o.Headers
		if h == nil {
			h = engine.CarryHeaders(from)
		}
		b, err := schemas.Marshal(o.Value)
		if err != nil {
			w.fail("%s: output %T does not encode: %v", p.group, o.Value, err)
			return
		}
		if _, ok := schemas.TopicByName(o.Topic); !ok {
			w.fail("%s: output to unknown topic %q", p.group, o.Topic)
			return
		}
		part := o.Partition
		if o.Topic != p.changelog {
			part = w.log.partitionOf(o.Topic, o.Key)
		}
		tx.records = append(tx.records, txnRecord{tp{o.Topic, part}, entry{key: o.Key, value: b, headers: h, at: w.ms()}})
	}
}
