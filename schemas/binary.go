package schemas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync"
)

// The Avro binary form of a record written with today's schema follows the
// Go type field by field, since the schema is generated from the type. The
// plans below encode and decode that form straight from and into Go values,
// without goavro's intermediate maps: the hot path of every processor. A
// record written with an older schema version is decoded by goavro.

type plan struct {
	kind   reflect.Kind
	bytes  bool
	fields []planField
	elem   *plan // slice element, map value or pointer target
	// target and zero are a pointer's target type and the encoding of its
	// zero value, which a nil pointer writes.
	target reflect.Type
	zero   []byte
}

type planField struct {
	index []int
	p     *plan
}

var plans sync.Map // reflect.Type -> *plan

func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{kind: t.Kind()}
	switch t.Kind() {
	case reflect.Struct:
		for _, f := range fieldsOf(t) {
			p.fields = append(p.fields, planField{index: f.index, p: planOf(f.typ)})
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p.bytes = true
		} else {
			p.elem = planOf(t.Elem())
		}
	case reflect.Map:
		p.elem = planOf(t.Elem())
	case reflect.Pointer:
		p.elem, p.target = planOf(t.Elem()), t.Elem()
		p.zero = encodeValue(nil, reflect.Zero(t.Elem()), p.elem)
	}
	plans.Store(t, p)
	return p
}

func appendLong(b []byte, n int64) []byte {
	return binary.AppendUvarint(b, uint64((n<<1)^(n>>63)))
}

func appendString(b []byte, s string) []byte {
	b = appendLong(b, int64(len(s)))
	return append(b, s...)
}

func encodeValue(b []byte, v reflect.Value, p *plan) []byte {
	switch p.kind {
	case reflect.Struct:
		for _, f := range p.fields {
			b = encodeValue(b, fieldAt(v, f.index), f.p)
		}
	case reflect.String:
		b = appendString(b, v.String())
	case reflect.Bool:
		if v.Bool() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case reflect.Int32, reflect.Int64:
		b = appendLong(b, v.Int())
	case reflect.Float64:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float()))
	case reflect.Slice:
		if p.bytes {
			b = appendLong(b, int64(v.Len()))
			return append(b, v.Bytes()...)
		}
		if n := v.Len(); n > 0 {
			b = appendLong(b, int64(n))
			for i := 0; i < n; i++ {
				b = encodeValue(b, v.Index(i), p.elem)
			}
		}
		b = append(b, 0)
	case reflect.Map:
		// The maps of the records are string-keyed maps of plain values:
		// encode them without reflection (these are in every VmRecord).
		switch m := v.Interface().(type) {
		case map[string]int64:
			return appendMap(b, m, appendLong)
		case map[string]string:
			return appendMap(b, m, appendString)
		}
		if n := v.Len(); n > 0 {
			// Sorted keys: the same state always encodes to the same bytes.
			keys := make([]string, 0, n)
			for _, k := range v.MapKeys() {
				keys = append(keys, k.String())
			}
			sort.Strings(keys)
			b = appendLong(b, int64(n))
			for _, k := range keys {
				b = appendString(b, k)
				b = encodeValue(b, v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), p.elem)
			}
		}
		b = append(b, 0)
	case reflect.Pointer:
		// A pointer is its target on the wire; nil is the zero value.
		if v.IsNil() {
			return append(b, p.zero...)
		}
		return encodeValue(b, v.Elem(), p.elem)
	default:
		panic(fmt.Sprintf("schemas: unsupported kind %s", p.kind))
	}
	return b
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

func fieldAt(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}

var errShort = errors.New("truncated record")

type reader struct {
	b   []byte
	err error
}

func (r *reader) long() int64 {
	if r.err != nil {
		return 0
	}
	u, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		if n < 0 {
			r.err = errors.New("varint overflows a long")
		}
		return 0
	}
	r.b = r.b[n:]
	return int64(u>>1) ^ -int64(u&1)
}

// size reads a length and checks it against what is left, so garbage can
// never make the decoder allocate more than the record holds.
func (r *reader) size() int {
	n := r.long()
	if r.err == nil && (n < 0 || n > int64(len(r.b))) {
		r.err = fmt.Errorf("length %d exceeds the %d bytes left", n, len(r.b))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

func (r *reader) take(n int) []byte {
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// count reads an array or map block count; a negative count is followed by
// the block's size in bytes (Avro spec).
func (r *reader) count() int {
	n := r.long()
	if n < 0 {
		n = -n
		r.long()
	}
	// Every item takes at least one byte.
	if r.err == nil && n > int64(len(r.b)) {
		r.err = fmt.Errorf("block of %d items exceeds the %d bytes left", n, len(r.b))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

func decodeValue(r *reader, v reflect.Value, p *plan) {
	if r.err != nil {
		return
	}
	switch p.kind {
	case reflect.Struct:
		for _, f := range p.fields {
			decodeValue(r, fieldAt(v, f.index), f.p)
		}
	case reflect.String:
		n := r.size()
		if r.err == nil {
			v.SetString(string(r.take(n)))
		}
	case reflect.Bool:
		if len(r.b) < 1 {
			r.err = errShort
			return
		}
		switch r.b[0] {
		case 0:
		case 1:
			v.SetBool(true)
		default:
			r.err = fmt.Errorf("boolean byte %d", r.b[0])
		}
		r.b = r.b[1:]
	case reflect.Int32:
		n := r.long()
		if n < math.MinInt32 || n > math.MaxInt32 {
			r.err = fmt.Errorf("int %d out of range", n)
			return
		}
		v.SetInt(n)
	case reflect.Int64:
		v.SetInt(r.long())
	case reflect.Float64:
		if len(r.b) < 8 {
			r.err = errShort
			return
		}
		v.SetFloat(math.Float64frombits(binary.LittleEndian.Uint64(r.take(8))))
	case reflect.Slice:
		if p.bytes {
			n := r.size()
			if r.err == nil {
				v.SetBytes(append([]byte(nil), r.take(n)...))
			}
			return
		}
		for {
			n := r.count()
			if r.err != nil || n == 0 {
				return
			}
			start := v.Len()
			grown := reflect.MakeSlice(v.Type(), start+n, start+n)
			reflect.Copy(grown, v)
			for i := 0; i < n; i++ {
				decodeValue(r, grown.Index(start+i), p.elem)
			}
			v.Set(grown)
		}
	case reflect.Map:
		for {
			n := r.count()
			if r.err != nil || n == 0 {
				return
			}
			if v.IsNil() {
				v.Set(reflect.MakeMapWithSize(v.Type(), n))
			}
			for i := 0; i < n; i++ {
				kn := r.size()
				if r.err != nil {
					return
				}
				k := string(r.take(kn))
				ev := reflect.New(v.Type().Elem()).Elem()
				decodeValue(r, ev, p.elem)
				v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), ev)
			}
		}
	case reflect.Pointer:
		// A zero value leaves the pointer nil: a record holds its rarely set
		// parts only while they are set. The canonical zero encoding is
		// skipped without allocating.
		if bytes.HasPrefix(r.b, p.zero) {
			r.b = r.b[len(p.zero):]
			v.SetZero()
			return
		}
		e := reflect.New(p.target)
		decodeValue(r, e.Elem(), p.elem)
		if r.err == nil && !e.Elem().IsZero() {
			v.Set(e)
		} else {
			v.SetZero()
		}
	default:
		r.err = fmt.Errorf("unsupported kind %s", p.kind)
	}
}

// encodeBody appends the Avro binary body of v (a struct value).
func encodeBody(b []byte, v reflect.Value) []byte {
	return encodeValue(b, v, planOf(v.Type()))
}

// decodeBody decodes a body written with today's schema of t.
func decodeBodyFast(body []byte, t reflect.Type) (any, error) {
	out := reflect.New(t)
	r := &reader{b: body}
	decodeValue(r, out.Elem(), planOf(t))
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(r.b))
	}
	return out.Interface(), nil
}
