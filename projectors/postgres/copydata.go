package postgres

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"time"
)

// copyData is rows in the binary format of COPY FROM STDIN (FORMAT
// binary), without the stream's header and trailer (copyReader adds them).
// The rebuild writes the rows of job_steps and jobs in it directly: through
// pgx's CopyFrom each value was boxed into an interface and encoded by a
// plan looked up per value, a sixth of the rebuild's CPU at 5 M events
// (profiled with pprof). The methods write what pgx writes for the same Go
// values.
type copyData []byte

// copyHeader starts a binary COPY stream: its signature, no flags and no
// header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyTrailer ends it: a row of -1 fields.
var copyTrailer = []byte{0xff, 0xff}

// pgEpoch is timestamptz's zero, 2000-01-01 UTC, in Unix microseconds.
const pgEpoch = 946_684_800 * 1_000_000

// textOID is the element type a text[] value names.
const textOID = 25

// row starts a row of n fields.
func (b copyData) row(n int) copyData { return binary.BigEndian.AppendUint16(b, uint16(n)) }

func (b copyData) null() copyData { return binary.BigEndian.AppendUint32(b, math.MaxUint32) }

func (b copyData) text(s string) copyData {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func (b copyData) int4(v int32) copyData {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func (b copyData) int8(v int64) copyData {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func (b copyData) timestamptz(t time.Time) copyData {
	return b.int8(t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - pgEpoch)
}

// nullTimestamptz is a timestamptz that is NULL when t is nil.
func (b copyData) nullTimestamptz(t *time.Time) copyData {
	if t == nil {
		return b.null()
	}
	return b.timestamptz(*t)
}

// textArray is a text[] of one dimension (none when empty); NULL for a nil
// slice, as pgx sends it.
func (b copyData) textArray(ss []string) copyData {
	if ss == nil {
		return b.null()
	}
	size := 12
	if len(ss) > 0 {
		size += 8
	}
	for _, s := range ss {
		size += 4 + len(s)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	if len(ss) == 0 {
		b = binary.BigEndian.AppendUint32(b, 0) // dimensions
		b = binary.BigEndian.AppendUint32(b, 0) // no NULL element
		return binary.BigEndian.AppendUint32(b, textOID)
	}
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, textOID)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	for _, s := range ss {
		b = b.text(s)
	}
	return b
}

// copyReader is the binary COPY stream of the chunks of rows sent on
// chunks until it is closed: the header, the chunks, the trailer. A chunk
// read to its end goes back on free for the writer to reuse.
type copyReader struct {
	ctx    context.Context
	chunks <-chan copyData
	free   chan<- copyData
	cur    copyData // what is left of the chunk being read
	chunk  copyData // that chunk, whole
	ended  bool
}

func newCopyReader(ctx context.Context, chunks <-chan copyData, free chan<- copyData) *copyReader {
	return &copyReader{ctx: ctx, chunks: chunks, free: free, cur: copyHeader}
}

func (r *copyReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.ended {
			return 0, io.EOF
		}
		if r.chunk != nil {
			select {
			case r.free <- r.chunk[:0]:
			default:
			}
			r.chunk = nil
		}
		select {
		case c, ok := <-r.chunks:
			if !ok {
				r.cur, r.ended = copyTrailer, true
				continue
			}
			r.cur, r.chunk = c, c
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}
