package schemas

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync"
	"unsafe"
)

// The Avro binary form of a record written with today's schema follows the
// Go type field by field, since the schema is generated from the type. The
// plans below encode and decode (decode.go) that form straight from and into
// Go values, without goavro's intermediate maps: the hot path of every
// processor and projector (a rebuild of the read model decodes every event
// ever written). A record written with an older schema version is decoded by
// goavro.
//
// A plan does not walk the Go value with reflect.Value: it is compiled into
// ops, a flat list of (kind, byte offset) for a struct with its embedded and
// nested struct values inlined, and the codec reads or writes each scalar
// (string, bool, int32, int64, float64, bytes) and each []string,
// map[string]int64 and map[string]string straight at base+offset. This is
// the package's only use of unsafe, and it stays within these rules:
//   - an op's offset comes from reflect (StructField.Offset) for the type
//     the op was compiled for, and the codec is only given memory of that
//     type: a value allocated by reflect.New or reflect.MakeSlice, or the
//     address of an addressable reflect.Value of the type; an op of a field
//     in an inline part (avro.go) reads the part's pointer at its own
//     offset and the field at an offset within the part's type, whose
//     value reflect.New made;
//   - an access goes through a pointer of the field's own layout (a field of
//     any named string type is a string, a *T field an unsafe.Pointer), so
//     the compiler emits the write barriers the collector needs; a slice
//     of any other element type is a sliceHeader, whose data pointer is
//     an unsafe.Pointer;
//   - other slices and maps, and the targets of pointers, are made with
//     reflect, which knows their element types.
// TestDecoderAgreesWithGoavro holds both directions against goavro for
// every record type with random values, also under the race detector.
//
// BenchmarkDecode and BenchmarkEncode (mix_bench_test.go), medians of 5
// runs interleaved with the reflect.Value codec this replaced (2026-11-22,
// this 2-core machine, under other benchmarks' load): decoding the mix of
// seven records 14.9 → 10.0 µs and 97 → 26 allocations (VmStateChanged
// 2.2 → 1.1 µs), encoding it 6.0 → 2.3 µs.

// sliceHeader is the layout of every slice (reflect's own, and
// unsafe.Slice's result).
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

type plan struct {
	typ  reflect.Type
	elem *plan // slice element, map value or pointer target
	// zero is the encoding of a pointer target's zero value, which a nil
	// pointer writes.
	zero []byte
	ops  []op
}

var plans sync.Map // reflect.Type -> *plan

func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{typ: t}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			p.elem = planOf(t.Elem())
		}
	case reflect.Map, reflect.Pointer:
		p.elem = planOf(t.Elem())
	}
	p.ops = opsOf(p)
	if t.Kind() == reflect.Pointer {
		p.zero = encode(nil, reflect.New(t.Elem()).UnsafePointer(), p.elem.ops)
	}
	plans.Store(t, p)
	return p
}

type opKind uint8

const (
	opString opKind = iota
	opBool
	opInt32
	opInt64
	opFloat64
	opBytes
	opStrings   // []string
	opSlice     // any other slice
	opLongMap   // map[string]int64
	opStringMap // map[string]string
	opMap       // any other map
	opPointer
)

// op encodes or decodes one value at byte offset off of the value at hand,
// or of its inline part in; p is the value's plan for slices, maps and
// pointers.
type op struct {
	kind opKind
	off  uintptr
	p    *plan
	in   *part
	// name is the Avro field the op reads (unset for a nested struct's own
	// ops, which carry their fields' names), and id says that it holds ids
	// (strings.go); the decoder checks each string by them. intern says
	// that its strings, or its one-entry long maps, are interned
	// (intern.go).
	name   string
	id     bool
	intern bool
}

// part is the inline part (avro.go) an op's field lies in: the struct the
// pointer at off points to, of type typ. zero is the op's encoding of a
// zero value, which it writes when the part is nil and which the decoder
// skips without making the part. run is zero followed by the zeros of the
// ops right after this one that lie in the same part, runOps ops in all:
// while the part is nil the codec writes or skips them at once (the nine
// rare fields at the end of a VmRecord are one run).
type part struct {
	off    uintptr
	typ    reflect.Type
	zero   []byte
	run    []byte
	runOps int
}

var (
	stringsType   = reflect.TypeFor[[]string]()
	longMapType   = reflect.TypeFor[map[string]int64]()
	stringMapType = reflect.TypeFor[map[string]string]()
)

// opsOf compiles the encoding and decoding of p's type: a struct's fields
// in order, a nested struct value's ops inlined at its offset; one op at
// offset 0 for any other type. p.elem is already planned.
func opsOf(p *plan) []op {
	t := p.typ
	switch t.Kind() {
	case reflect.Struct:
		var ops []op
		for _, f := range fieldsOf(t) {
			var in *part
			off, ft := uintptr(0), t
			for _, i := range f.index {
				if ft.Kind() == reflect.Pointer {
					// The field lies in an inline part: its offset is
					// within the part.
					in = &part{off: off, typ: ft.Elem()}
					off, ft = 0, ft.Elem()
				}
				sf := ft.Field(i)
				off, ft = off+sf.Offset, sf.Type
			}
			for _, o := range planOf(f.typ).ops {
				if f.typ.Kind() != reflect.Struct {
					o.name = f.name
					o.id = (o.kind == opString || o.kind == opStrings) && IsIDField(f.name)
					o.intern = (o.kind == opString || o.kind == opStrings || o.kind == opLongMap) && f.intern
				}
				ops = append(ops, placed(o, off, in))
			}
		}
		markRuns(ops)
		return ops
	case reflect.String:
		return []op{{kind: opString}}
	case reflect.Bool:
		return []op{{kind: opBool}}
	case reflect.Int32:
		return []op{{kind: opInt32}}
	case reflect.Int64:
		return []op{{kind: opInt64}}
	case reflect.Float64:
		return []op{{kind: opFloat64}}
	case reflect.Slice:
		switch {
		case t.Elem().Kind() == reflect.Uint8:
			return []op{{kind: opBytes}}
		case t == stringsType:
			return []op{{kind: opStrings}}
		}
		return []op{{kind: opSlice, p: p}}
	case reflect.Map:
		switch t {
		case longMapType:
			return []op{{kind: opLongMap}}
		case stringMapType:
			return []op{{kind: opStringMap}}
		}
		return []op{{kind: opMap, p: p}}
	case reflect.Pointer:
		return []op{{kind: opPointer, p: p}}
	}
	panic(fmt.Sprintf("schemas: unsupported kind %s", t.Kind()))
}

// markRuns sets the run of every op of an inline part: its zero and
// those of the ops right after it in the same part.
func markRuns(ops []op) {
	for i := len(ops) - 1; i >= 0; i-- {
		in := ops[i].in
		if in == nil {
			continue
		}
		in.run, in.runOps = in.zero, 1
		if i+1 < len(ops) && ops[i+1].in != nil && ops[i+1].in.off == in.off {
			next := ops[i+1].in
			in.run = append(append([]byte(nil), in.zero...), next.run...)
			in.runOps += next.runOps
		}
	}
}

// placed moves op o of a field's own plan to offset off of the struct at
// hand, or of its inline part in.
func placed(o op, off uintptr, in *part) op {
	switch {
	case o.in != nil && in != nil:
		panic("schemas: an inline part inside another")
	case o.in != nil:
		// A nested struct value's inline part: its pointer moves.
		moved := *o.in
		moved.off += off
		o.in = &moved
	case in != nil:
		o.off += off
		own := *in
		own.zero = encode(nil, reflect.New(in.typ).UnsafePointer(), []op{o})
		o.in = &own
	default:
		o.off += off
	}
	return o
}

func appendLong(b []byte, n int64) []byte {
	return binary.AppendUvarint(b, uint64((n<<1)^(n>>63)))
}

func appendString(b []byte, s string) []byte {
	b = appendLong(b, int64(len(s)))
	return append(b, s...)
}

// encode appends the value at base, encoded by ops.
func encode(b []byte, base unsafe.Pointer, ops []op) []byte {
	for i := 0; i < len(ops); i++ {
		o := &ops[i]
		at := unsafe.Add(base, o.off)
		if o.in != nil {
			part := *(*unsafe.Pointer)(unsafe.Add(base, o.in.off))
			if part == nil {
				b = append(b, o.in.run...)
				i += o.in.runOps - 1
				continue
			}
			at = unsafe.Add(part, o.off)
		}
		switch o.kind {
		case opString:
			b = appendString(b, *(*string)(at))
		case opBool:
			if *(*bool)(at) {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case opInt32:
			b = appendLong(b, int64(*(*int32)(at)))
		case opInt64:
			b = appendLong(b, *(*int64)(at))
		case opFloat64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(at)))
		case opBytes:
			b = appendLong(b, int64(len(*(*[]byte)(at))))
			b = append(b, *(*[]byte)(at)...)
		case opStrings:
			if s := *(*[]string)(at); len(s) > 0 {
				b = appendLong(b, int64(len(s)))
				for _, e := range s {
					b = appendString(b, e)
				}
			}
			b = append(b, 0)
		case opLongMap:
			b = appendMap(b, *(*map[string]int64)(at), appendLong)
		case opStringMap:
			b = appendMap(b, *(*map[string]string)(at), appendString)
		case opSlice:
			v := reflect.NewAt(o.p.typ, at).Elem()
			if n := v.Len(); n > 0 {
				b = appendLong(b, int64(n))
				data, size := v.UnsafePointer(), o.p.elem.typ.Size()
				for i := range n {
					b = encode(b, unsafe.Add(data, uintptr(i)*size), o.p.elem.ops)
				}
			}
			b = append(b, 0)
		case opMap:
			b = encodeMap(b, reflect.NewAt(o.p.typ, at).Elem(), o.p.elem)
		case opPointer:
			// A pointer is its target on the wire; nil is the zero value.
			if p := *(*unsafe.Pointer)(at); p != nil {
				b = encode(b, p, o.p.elem.ops)
			} else {
				b = append(b, o.p.zero...)
			}
		}
	}
	return b
}

// encodeMap encodes a map other than map[string]int64 and
// map[string]string, with reflect, keys sorted.
func encodeMap(b []byte, v reflect.Value, elem *plan) []byte {
	if n := v.Len(); n > 0 {
		keys := make([]string, 0, n)
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		b = appendLong(b, int64(n))
		e := reflect.New(elem.typ)
		for _, k := range keys {
			b = appendString(b, k)
			e.Elem().Set(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())))
			b = encode(b, e.UnsafePointer(), elem.ops)
		}
	}
	return append(b, 0)
}

// appendMap encodes a map in one block, keys sorted so that the same state
// always encodes to the same bytes.
func appendMap[V any](b []byte, m map[string]V, enc func([]byte, V) []byte) []byte {
	switch len(m) {
	case 0:
	case 1:
		b = appendLong(b, 1)
		for k, v := range m {
			b = enc(appendString(b, k), v)
		}
	default:
		b = appendLong(b, int64(len(m)))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			b = enc(appendString(b, k), m[k])
		}
	}
	return append(b, 0)
}

// encodeBody appends the Avro binary body of v, a struct value of p's type
// (addressable when it came through a pointer, as nearly every record does).
func encodeBody(b []byte, v reflect.Value, p *plan) []byte {
	if !v.CanAddr() {
		c := reflect.New(v.Type())
		c.Elem().Set(v)
		v = c.Elem()
	}
	return encode(b, unsafe.Pointer(v.UnsafeAddr()), p.ops)
}
