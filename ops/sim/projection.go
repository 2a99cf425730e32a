package sim

import (
	"math/rand/v2"
	"slices"

	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// projection is the world's Postgres projector as a pure fold
// (postgres.Model): it polls what was committed on the projector's topics,
// a few records of one partition and then of another, as a consumer's
// fetches interleave partitions. When the faults stop and when the world
// has settled, it reads to the end, and what it folded must equal a
// rebuild of the whole log read topic by topic in a random order: a
// read model that depends on how its polls fell is not a projection of
// the log. A projector crash loses nothing here, as in Postgres: its rows
// and offsets commit together.
//
// It draws from a random source of its own, so that the world plays the
// same with it as without it.
type projection struct {
	rng    *rand.Rand
	model  *postgres.Model
	parts  map[tp][]schemas.Record // decoded, in log order
	cursor map[tp]int
	order  []tp // every partition of the projector's topics
}

func newProjection(w *world) *projection {
	p := &projection{rng: rand.New(rand.NewPCG(w.opts.Seed, w.opts.Seed^0x9e0)), model: postgres.NewModel(),
		parts: map[tp][]schemas.Record{}, cursor: map[tp]int{}}
	for _, t := range postgres.Topics {
		for part := range w.log.partitions(t) {
			p.order = append(p.order, tp{t, part})
		}
	}
	return p
}

// read decodes what was committed since the last read.
func (p *projection) read(w *world) {
	for _, at := range p.order {
		for o := int64(len(p.parts[at])); o < w.log.end(at); o++ {
			e, _ := w.log.read(at, o)
			r := schemas.Record{Topic: at.topic, Key: e.key, Partition: at.part, Offset: o, TimestampMs: e.at}
			if e.value != nil {
				v, err := schemas.Unmarshal(e.value)
				if err != nil {
					w.fail("%s %d@%d does not decode: %v", at.topic, at.part, o, err)
					return
				}
				r.Value = v
			}
			p.parts[at] = append(p.parts[at], r)
		}
	}
}

// poll folds one poll: up to 64 records, taken in runs from partitions
// chosen at random.
func (p *projection) poll(w *world) {
	p.read(w)
	var poll []schemas.Record
	for budget := 1 + p.rng.IntN(64); budget > 0; {
		var open []tp
		for _, at := range p.order {
			if p.cursor[at] < len(p.parts[at]) {
				open = append(open, at)
			}
		}
		if len(open) == 0 {
			break
		}
		at := open[p.rng.IntN(len(open))]
		n := min(budget, 1+p.rng.IntN(8), len(p.parts[at])-p.cursor[at])
		poll = append(poll, p.parts[at][p.cursor[at]:p.cursor[at]+n]...)
		p.cursor[at] += n
		budget -= n
	}
	if len(poll) > 0 {
		p.model.Apply(withValues(poll))
	}
}

// matchesRebuild reads to the end and holds the model against a rebuild.
func (p *projection) matchesRebuild(w *world) {
	p.read(w)
	for _, at := range p.order {
		if rest := p.parts[at][p.cursor[at]:]; len(rest) > 0 {
			p.model.Apply(withValues(rest))
			p.cursor[at] = len(p.parts[at])
		}
	}
	// The rebuild reads topic after topic in an order of its own: a row
	// written from two topics (a job from its command and its events, a
	// host from its status and its usage) must not depend on which was
	// read first.
	var all []schemas.Record
	order := slices.Clone(p.order)
	p.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	slices.SortStableFunc(order, func(a, b tp) int {
		return slices.Index(postgres.Topics, a.topic) - slices.Index(postgres.Topics, b.topic)
	})
	topics := slices.Clone(postgres.Topics)
	p.rng.Shuffle(len(topics), func(i, j int) { topics[i], topics[j] = topics[j], topics[i] })
	for _, t := range topics {
		for _, at := range order {
			if at.topic == t {
				all = append(all, p.parts[at]...)
			}
		}
	}
	w.checks["projection equals a rebuild"]++
	if d := p.model.Diff(postgres.Rebuilt(withValues(all))); d != "" {
		w.fail("the read model folded poll by poll differs from a rebuild of the log: %s", d)
	}
}

// withValues drops tombstones, which the projector skips.
func withValues(rs []schemas.Record) []schemas.Record {
	if !slices.ContainsFunc(rs, func(r schemas.Record) bool { return r.Value == nil }) {
		return rs
	}
	return slices.DeleteFunc(slices.Clone(rs), func(r schemas.Record) bool { return r.Value == nil })
}
