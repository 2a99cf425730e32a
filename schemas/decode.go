package schemas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// The decoder writes each scalar straight into the value being filled, at
// its op's offset (see the rules in binary.go).
//
// All strings of a record outside maps share one allocation holding just
// their bytes, instead of one allocation each: a long-lived record (a VM
// processor's state) takes no more memory than with separate strings, and
// keeps that allocation alive as long as it keeps any of its strings. (The
// VM processor's heap per VM after restoring 100,000 VMs, bench -only storm:
// 748 B with a string per field, 732 B so; slicing the strings out of the
// whole body converted to one string took 64 B more per VM than a string
// per field, 2026-11-22.)

var errShort = errors.New("truncated record")

// reader reads body from pos on. It moves an index rather than reslicing
// body: a slice written through the *reader is a pointer write, with a
// write barrier whenever the collector runs. The string fields read so far
// wait in pending (the first ones in the reader itself, which lives on the
// stack, the rest in more) until flush fills them from one allocation.
type reader struct {
	body    []byte
	pos     int
	err     error
	npend   int
	pending [32]pendingString
	more    []pendingString
	// strs counts the non-empty strings read, pending, flushed or
	// interned; partStrs is strs when an inline part was last made.
	strs, partStrs int
	// lax skips the strings' rules (strings.go).
	lax bool
}

// pendingString is a string field still to be set to body[at:at+n].
type pendingString struct {
	field *string
	at, n int
}

// left is the number of bytes not yet read.
func (r *reader) left() int { return len(r.body) - r.pos }

func (r *reader) long() int64 {
	if r.pos < len(r.body) && r.body[r.pos] < 0x80 {
		// Most longs of a record (lengths, counts, small numbers) fit in
		// one byte.
		u := uint64(r.body[r.pos])
		r.pos++
		return int64(u>>1) ^ -int64(u&1)
	}
	if r.err != nil {
		return 0
	}
	u, n := binary.Uvarint(r.body[r.pos:])
	if n <= 0 {
		r.err = errShort
		if n < 0 {
			r.err = errors.New("varint overflows a long")
		}
		return 0
	}
	r.pos += n
	return int64(u>>1) ^ -int64(u&1)
}

// size reads a length and checks it against what is left, so garbage can
// never make the decoder allocate more than the record holds.
func (r *reader) size() int {
	n := r.long()
	if r.err == nil && (n < 0 || n > int64(r.left())) {
		r.err = fmt.Errorf("length %d exceeds the %d bytes left", n, r.left())
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// take returns the next n bytes (n ≤ left), a view of body.
func (r *reader) take(n int) []byte {
	out := r.body[r.pos : r.pos+n]
	r.pos += n
	return out
}

// str reads a string of field o into *p, which flush sets.
func (r *reader) str(p *string, o *op) {
	n := r.size()
	if n == 0 {
		*p = ""
		return
	}
	if r.err == nil && !r.lax && !plain(r.body[r.pos:r.pos+n], o.id) {
		if err := checkField(o.name, o.id, r.body[r.pos:r.pos+n]); err != nil {
			r.err = err
			return
		}
	}
	r.strs++
	if o.intern {
		*p = intern(r.body[r.pos : r.pos+n])
		r.pos += n
		return
	}
	ps := pendingString{field: p, at: r.pos, n: n}
	if r.npend < len(r.pending) {
		r.pending[r.npend] = ps
		r.npend++
	} else {
		r.more = append(r.more, ps)
	}
	r.pos += n
}

// flush copies the bytes of the pending strings into one new allocation
// and sets their fields to slices of it. It runs at the end of a record,
// and before a value holding pending fields is copied (a slice regrown for
// its next block, a map's value stored).
func (r *reader) flush() {
	n := 0
	for _, s := range r.pending[:r.npend] {
		n += s.n
	}
	for _, s := range r.more {
		n += s.n
	}
	if n == 0 {
		return
	}
	buf := make([]byte, 0, n)
	for _, list := range [2][]pendingString{r.pending[:r.npend], r.more} {
		for _, s := range list {
			buf = append(buf, r.body[s.at:s.at+s.n]...)
			// buf's bytes up to len(buf) are never written again.
			*s.field = unsafe.String(&buf[len(buf)-s.n], s.n)
		}
	}
	r.npend, r.more = 0, r.more[:0]
}

// string reads a map key or value of field name: its own allocation, as a
// map copies it. Map keys and values are text.
func (r *reader) string(name string) string {
	return string(r.text(name))
}

// text reads a map key or value of field name as a view of the body,
// checked as text; nil after an error.
func (r *reader) text(name string) []byte {
	b := r.take(r.size())
	if r.err == nil && !r.lax {
		if err := checkField(name, false, b); err != nil {
			r.err = err
			return nil
		}
	}
	return b
}

// count reads an array or map block count; a negative count is followed by
// the block's size in bytes (Avro spec).
func (r *reader) count() int {
	n := r.long()
	if n < 0 {
		n = -n
		r.long()
	}
	// Every item takes at least one byte; -MinInt64 stays negative.
	if r.err == nil && (n < 0 || n > int64(r.left())) {
		r.err = fmt.Errorf("block of %d items exceeds the %d bytes left", n, r.left())
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// decode runs ops on the value at base (see the rules above).
func (r *reader) decode(base unsafe.Pointer, ops []op) {
	for i := 0; i < len(ops); i++ {
		if r.err != nil {
			return
		}
		o := &ops[i]
		at := unsafe.Add(base, o.off)
		var made *unsafe.Pointer
		if o.in != nil {
			var skip int
			if at, made, skip = r.inPart(base, o); skip > 0 {
				i += skip - 1
				continue
			}
		}
		switch o.kind {
		case opString:
			r.str((*string)(at), o)
		case opBool:
			if r.left() < 1 {
				r.err = errShort
				return
			}
			switch b := r.body[r.pos]; b {
			case 0:
				*(*bool)(at) = false
			case 1:
				*(*bool)(at) = true
			default:
				r.err = fmt.Errorf("boolean byte %d", b)
			}
			r.pos++
		case opInt32:
			n := r.long()
			if n < math.MinInt32 || n > math.MaxInt32 {
				r.err = fmt.Errorf("int %d out of range", n)
				return
			}
			*(*int32)(at) = int32(n)
		case opInt64:
			*(*int64)(at) = r.long()
		case opFloat64:
			if r.left() < 8 {
				r.err = errShort
				return
			}
			*(*float64)(at) = math.Float64frombits(binary.LittleEndian.Uint64(r.take(8)))
		case opBytes:
			// A copy: the caller may change it, and the body is not ours.
			n := r.size()
			*(*[]byte)(at) = append([]byte(nil), r.take(n)...)
		case opStrings:
			r.strings((*[]string)(at), o)
		case opLongMap:
			r.longMap((*map[string]int64)(at), o)
		case opStringMap:
			r.stringMap((*map[string]string)(at), o.name)
		case opSlice:
			r.slice((*sliceHeader)(at), o.p)
		case opMap:
			r.mapOf(reflect.NewAt(o.p.typ, at).Elem(), o.p.elem, o.name)
		case opPointer:
			*(*unsafe.Pointer)(at) = r.pointer(o.p)
		}
		if made != nil {
			r.dropIfZero(made, o.in.typ)
		}
	}
}

// dropIfZero sets the pointer *made to the part of type typ that inPart
// made back to nil if the field it was made for read a zero value after
// all, written in a longer form than the zero inPart looks for.
func (r *reader) dropIfZero(made *unsafe.Pointer, typ reflect.Type) {
	if r.strs == r.partStrs && reflect.NewAt(typ, *made).Elem().IsZero() {
		*made = nil
	}
}

// inPart returns where op o of an inline part finds its value in the
// value at base, and the part's pointer if it made the part for it. The
// part is made for the first of its fields that is not written as zero;
// while it is nil, zeros are skipped: at is nil and skip is the number of
// ops read, the op's whole run when all of it is zero.
func (r *reader) inPart(base unsafe.Pointer, o *op) (at unsafe.Pointer, made *unsafe.Pointer, skip int) {
	p := (*unsafe.Pointer)(unsafe.Add(base, o.in.off))
	if *p != nil {
		return unsafe.Add(*p, o.off), nil, 0
	}
	if bytes.HasPrefix(r.body[r.pos:], o.in.run) {
		r.pos += len(o.in.run)
		return nil, nil, o.in.runOps
	}
	if o.in.runOps > 1 && bytes.HasPrefix(r.body[r.pos:], o.in.zero) {
		r.pos += len(o.in.zero)
		return nil, nil, 1
	}
	*p = reflect.New(o.in.typ).UnsafePointer()
	r.partStrs = r.strs
	return unsafe.Add(*p, o.off), p, 0
}

// strings decodes an array of strings into s. The collections have
// methods of their own, called once a collection: decode's switch stays
// one screen, at no cost per value.
func (r *reader) strings(s *[]string, o *op) {
	for n := r.count(); n > 0; n = r.count() {
		if len(*s) > 0 {
			r.flush()
		}
		start := len(*s)
		*s = append(make([]string, 0, start+n), *s...)[:start+n]
		for i := range n {
			r.str(&(*s)[start+i], o)
		}
	}
}

// longMap decodes a map of longs of field o into m. A map of one entry of
// an interned field is the table's, shared (internLongMap).
func (r *reader) longMap(m *map[string]int64, o *op) {
	n := r.count()
	if n == 1 && o.intern {
		k := r.text(o.name)
		v := r.long()
		if n = r.count(); n == 0 {
			if r.err == nil {
				*m = internLongMap(k, v)
			}
			return
		}
		if r.err == nil {
			*m = make(map[string]int64, n+1)
			(*m)[string(k)] = v
		}
	}
	for ; n > 0; n = r.count() {
		if *m == nil {
			*m = make(map[string]int64, n)
		}
		for range n {
			k := r.string(o.name)
			(*m)[k] = r.long()
		}
	}
}

// stringMap decodes a map of strings into m; name is the field's, for
// errors.
func (r *reader) stringMap(m *map[string]string, name string) {
	for n := r.count(); n > 0; n = r.count() {
		if *m == nil {
			*m = make(map[string]string, n)
		}
		for range n {
			k := r.string(name)
			(*m)[k] = r.string(name)
		}
	}
}

// slice decodes an array into the slice at h, of plan p. An array of one
// item in one block (a VM's latest job, most often) is a new value of the
// element's type, which is laid out as an array of one; reflect.MakeSlice
// would allocate its result's header besides the array.
func (r *reader) slice(h *sliceHeader, p *plan) {
	elem := p.elem
	size := elem.typ.Size()
	for n := r.count(); n > 0; n = r.count() {
		start := h.len
		var data unsafe.Pointer
		if start == 0 && n == 1 {
			data = reflect.New(elem.typ).UnsafePointer()
		} else {
			if start > 0 {
				r.flush()
			}
			grown := reflect.MakeSlice(p.typ, start+n, start+n)
			reflect.Copy(grown, reflect.NewAt(p.typ, unsafe.Pointer(h)).Elem())
			data = grown.UnsafePointer()
		}
		for i := range n {
			r.decode(unsafe.Add(data, uintptr(start+i)*size), elem.ops)
		}
		h.data, h.len, h.cap = data, start+n, start+n
	}
}

// mapOf decodes a map into the map v of values of plan elem.
func (r *reader) mapOf(v reflect.Value, elem *plan, name string) {
	for n := r.count(); n > 0; n = r.count() {
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), n))
		}
		for range n {
			k := r.string(name)
			e := reflect.New(elem.typ)
			r.decode(e.UnsafePointer(), elem.ops)
			if r.err != nil {
				return
			}
			r.flush()
			v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e.Elem())
		}
	}
}

// pointer decodes the target of pointer plan p and returns a pointer to a
// new value, or nil for a zero value: a record holds its rarely set parts
// only while they are set. The canonical zero encoding is skipped without
// allocating.
func (r *reader) pointer(p *plan) unsafe.Pointer {
	if bytes.HasPrefix(r.body[r.pos:], p.zero) {
		r.pos += len(p.zero)
		return nil
	}
	e := reflect.New(p.elem.typ)
	strs := r.strs
	r.decode(e.UnsafePointer(), p.elem.ops)
	// A string the target holds is set only at the next flush: a target
	// that read a non-empty string is not zero, whatever IsZero says now.
	if r.err != nil || (r.strs == strs && e.Elem().IsZero()) {
		return nil
	}
	return e.UnsafePointer()
}

// decodeBodyFast decodes a body written with today's schema of p's type
// into a new value and returns a pointer to it.
func decodeBodyFast(body []byte, p *plan, lax bool) (any, error) {
	out := reflect.New(p.typ)
	r := reader{body: body, lax: lax}
	r.decode(out.UnsafePointer(), p.ops)
	r.flush()
	if r.err != nil {
		return nil, r.err
	}
	if r.left() != 0 {
		return nil, fmt.Errorf("%d trailing bytes", r.left())
	}
	return out.Interface(), nil
}
