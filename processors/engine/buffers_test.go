package engine

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// TestChangelogBuffersReuseOnlyWhatWasHandedBack checks that a batch gets
// the last batch's buffer and records only when iterate handed them back
// (after an End without error), zeroed and big enough, and fresh ones
// otherwise.
func TestChangelogBuffersReuseOnlyWhatWasHandedBack(t *testing.T) {
	p := &Processor[*schemas.VmRecord]{slabHint: 100}

	slab, recs := p.changelogBuffers(3)
	if len(slab) != 0 || cap(slab) < 100 || len(recs) != 3 {
		t.Fatalf("first batch: slab len %d cap %d, %d records; want empty, cap ≥ 100, 3", len(slab), cap(slab), len(recs))
	}
	slab = append(slab, "vm-1"...)
	recs[0] = kgo.Record{Topic: "t", Key: slab[:4], Offset: 7}
	// The batch committed: iterate hands both back.
	p.slab, p.recs = slab, recs

	slab2, recs2 := p.changelogBuffers(2)
	if &slab2[:1][0] != &slab[:1][0] {
		t.Fatal("the committed batch's buffer was not reused")
	}
	if len(slab2) != 0 || len(recs2) != 2 || &recs2[0] != &recs[0] {
		t.Fatalf("reused: slab len %d, %d records (same array %v); want 0, 2, true", len(slab2), len(recs2), &recs2[0] == &recs[0])
	}
	if recs2[0].Topic != "" || recs2[0].Key != nil || recs2[0].Offset != 0 {
		t.Fatalf("reused record not zeroed: %+v", recs2[0])
	}
	if p.slab != nil || p.recs != nil {
		t.Fatal("buffers still held by the processor while a batch uses them")
	}

	// This batch fails (not handed back): the next one starts fresh.
	slab3, recs3 := p.changelogBuffers(2)
	if cap(slab3) > 0 && &slab3[:1][0] == &slab2[:1][0] || &recs3[0] == &recs2[0] {
		t.Fatal("a failed batch's buffers were reused")
	}

	// More records than the kept array holds, and a larger hint: new ones.
	p.slab, p.recs = slab3, recs3
	p.slabHint = 4 * cap(slab3)
	slab4, recs4 := p.changelogBuffers(5)
	if len(recs4) != 5 || cap(slab4) < p.slabHint {
		t.Fatalf("grown: %d records, slab cap %d; want 5, ≥ %d", len(recs4), cap(slab4), p.slabHint)
	}
}
