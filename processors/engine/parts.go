package engine

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// Parted is a Machine whose state is written to its changelog in parts
// (schemas.Part): a transaction writes the parts its batch changed, not
// the whole state of every key it touched. A state of megabytes (a zone's
// placement) changes by a few hundred bytes per record; rewriting it whole
// made the changelog most of the processor's work.
//
// A state's header, the part named "", is written under the state key;
// every other part under schemas.PartKey(key, name), on the key's
// partition, so one restore reads all of them. A key has state while its
// header is on the changelog: parts without one are left over from a
// state that went, and are ignored by a restore and tombstoned by the
// key's next write. A state value (an S) under the state key is a state
// written whole, by a machine before it wrote parts: it is restored as it
// is, and the key's next write writes every part (the header replaces the
// whole state) and tombstones the parts the restore found beside it.
type Parted[S any] interface {
	// AppendParts appends to dst the parts of key's state s that changed
	// since the last call for key (or since s was restored), a nil value
	// for a part that is gone; with all set, every part s has, its header
	// included. s is no state when the key stepped to none: the machine
	// then names every part the key had as gone. A part's value is never
	// an S.
	AppendParts(dst []schemas.Part, key string, s S, all bool) []schemas.Part
	// Assemble builds a key's state from the parts the changelog holds,
	// in any order, each once, its header among them.
	Assemble(key string, parts []schemas.Part) (S, error)
}

// partedMachine returns the machine as a Parted, unless the processor restores no
// state (Config.SkipDecode).
func (p *Processor[S]) partedMachine() Parted[S] {
	pm, ok := p.m.(Parted[S])
	if !ok || p.cfg.SkipDecode {
		return nil
	}
	return pm
}

// partWrite is one changelog record of a parted state: the part's name
// and value (nil for a tombstone), of the key of touched entry k.
type partWrite struct {
	k     int
	name  string
	value any
}

// changelogParts is the changelog phase of a Parted machine: the records
// of the parts each touched key changed, in one transaction with the
// batch. A key restored whole, or beside left-over parts, first has those
// parts tombstoned, then every part written.
func (p *Processor[S]) changelogParts(tx *txn) error {
	ws, err := p.partWrites()
	if err != nil {
		return err
	}
	slab, recs := p.changelogBuffers(len(ws))
	for i, w := range ws {
		tk := &p.touched[w.k]
		kr := &recs[i]
		kr.Topic, kr.Partition = p.cfg.Changelog, tk.part
		start := len(slab)
		slab = schemas.AppendPartKey(slab, tk.key, w.name)
		kr.Key = slab[start:len(slab):len(slab)]
		if w.value != nil {
			start = len(slab)
			if slab, err = p.codec.AppendEncode(tx.ctx, slab, w.value); err != nil {
				return fmt.Errorf("%s: encode part %q of %s: %w", p.cfg.Name, w.name, tk.key, err)
			}
			kr.Value = slab[start:len(slab):len(slab)]
			kr.Headers = p.typeHeader(w.value)
		}
		tx.produce(kr)
	}
	p.slabHint = len(slab) + len(slab)/8
	tx.slab, tx.recs = slab, recs
	// The values are encoded: the next batch keeps the list, not the
	// parts, and not the list of a rewrite of every part of a large state.
	clear(ws)
	if cap(ws) > maxKeptWrites {
		ws = nil
	}
	p.writes = ws[:0]
	return nil
}

// maxKeptWrites bounds the lists of parts and part records kept for the
// next batch.
const maxKeptWrites = 1 << 14

// partWrites lists the batch's part records, key by key.
func (p *Processor[S]) partWrites() ([]partWrite, error) {
	ws := p.writes[:0]
	for k, tk := range p.touched {
		if !tk.has {
			p.st.remove(tk.part, tk.key)
		}
		stale, rewrite := p.st.takeStale(tk.part, tk.key)
		for _, name := range stale {
			ws = append(ws, partWrite{k: k, name: name})
		}
		all := !tk.had || rewrite
		if !tk.has {
			if !tk.had && !rewrite {
				continue
			}
			ws = append(ws, partWrite{k: k}) // the header
		}
		p.partBuf = p.parted.AppendParts(p.partBuf[:0], tk.key, tk.s, all)
		header := false
		for _, pt := range p.partBuf {
			if _, whole := pt.Value.(S); whole {
				return nil, fmt.Errorf("%s: part %q of %s is a whole state", p.cfg.Name, pt.Name, tk.key)
			}
			header = header || (pt.Name == "" && pt.Value != nil)
			ws = append(ws, partWrite{k: k, name: pt.Name, value: pt.Value})
		}
		if tk.has && all && !header {
			return nil, fmt.Errorf("%s: the parts of %s have no header", p.cfg.Name, tk.key)
		}
	}
	clear(p.partBuf)
	if cap(p.partBuf) > maxKeptWrites {
		p.partBuf = nil
	}
	return ws, nil
}

// gathered is what a restore read of one key of a Parted machine: a
// whole state, or the parts by name ("" the header).
type gathered[S any] struct {
	whole    S
	hasWhole bool
	parts    map[string]any
}

// gather applies one changelog record of a Parted machine, its value
// decoded into v (nil for a tombstone), to what the restore holds of its
// key in g.
func (p *Processor[S]) gather(g map[int32]map[string]*gathered[S], r *kgo.Record, v any) {
	key, name := schemas.SplitPartKey(string(r.Key))
	byKey := g[r.Partition]
	if byKey == nil {
		byKey = map[string]*gathered[S]{}
		g[r.Partition] = byKey
	}
	k := byKey[key]
	if k == nil {
		k = &gathered[S]{parts: map[string]any{}}
		byKey[key] = k
	}
	s, whole := v.(S)
	switch {
	case name == "" && whole:
		k.whole, k.hasWhole = s, true
		delete(k.parts, "")
	case name == "":
		var zero S
		k.whole, k.hasWhole = zero, false
		fallthrough
	default:
		if v == nil {
			delete(k.parts, name)
		} else {
			k.parts[name] = v
		}
	}
}

// assembleAll makes the states of what a restore gathered: a key's whole
// state, or its parts assembled by the machine; a key restored whole, or
// with parts beside no header, has them listed stale for its next write.
func (p *Processor[S]) assembleAll(g map[int32]map[string]*gathered[S]) error {
	var parts []schemas.Part
	for part, byKey := range g {
		for key, k := range byKey {
			_, header := k.parts[""]
			if k.hasWhole || !header {
				if k.hasWhole || len(k.parts) > 0 {
					p.st.setStale(part, key, names(k.parts))
				}
				if k.hasWhole {
					p.restored(part, key, k.whole)
				}
				continue
			}
			parts = parts[:0]
			for name, v := range k.parts {
				parts = append(parts, schemas.Part{Name: name, Value: v})
			}
			s, err := p.parted.Assemble(key, parts)
			if err != nil {
				return fmt.Errorf("%s: assemble %s from %d parts of %s/%d: %w", p.cfg.Name, key, len(parts), p.cfg.Changelog, part, err)
			}
			if NoState(s) {
				return errors.New(p.cfg.Name + ": assembled no state of " + key)
			}
			p.restored(part, key, s)
			delete(byKey, key) // its parts may go before the next key's
		}
	}
	return nil
}

// names lists the names of parts, the header aside.
func names(parts map[string]any) []string {
	out := make([]string, 0, len(parts))
	for n := range parts {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
