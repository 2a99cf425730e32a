package journal

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// The payload columns hold each event as JSON text, exactly as
// encoding/json renders it (field names as declared, no tags). Rendering it
// with encoding/json cost 18 % of the projector's CPU in a catch-up
// (profiled with pprof, BenchmarkJournalIngest), so the events are rendered
// by appenders built once per type from its fields, for the types made of
// what they can render exactly like encoding/json: strings, bools,
// integers, string slices and structs of those, embedded or not, without
// tags. Any other type (floats, maps, pointers, a tag) is rendered by
// encoding/json. payload_test.go checks every schema type against
// encoding/json.

// appender appends the JSON of the value at p, of the type it was built
// for.
type appender func(dst []byte, p unsafe.Pointer) []byte

var appenders sync.Map // reflect.Type → appender, nil when encoding/json renders the type

// payloadBufs are the buffers payloads are rendered in before their copy
// into a string, when no arena holds them.
var payloadBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// renderPayload is the JSON text of an event, in its own allocation.
func renderPayload(v any) (string, error) { return (*payloads)(nil).render(v) }

// payloads is where the projector renders the payloads of the rows it
// reads: many to an allocation (a chunk), each payload's string a slice of
// its chunk, never written again. A string per payload, allocated and
// copied into, was a third of the rendering's CPU (profiled with pprof,
// BenchmarkTakeRecords). A chunk lives as long as a row holds one of its
// payloads. One goroutine renders into a payloads; a nil one renders
// every payload into an allocation of its own.
type payloads struct {
	chunk []byte
}

// payloadChunk is the size of a chunk; a payload that does not fit in what
// is left of one starts the next.
const payloadChunk = 64 << 10

// render is the JSON text of an event.
func (ps *payloads) render(v any) (string, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		b, err := json.Marshal(v)
		return string(b), err
	}
	a := appenderOf(rv.Type().Elem())
	if a == nil {
		b, err := json.Marshal(v)
		return string(b), err
	}
	if ps == nil {
		bp := payloadBufs.Get().(*[]byte)
		*bp = a((*bp)[:0], rv.UnsafePointer())
		out := string(*bp)
		payloadBufs.Put(bp)
		return out, nil
	}
	if cap(ps.chunk)-len(ps.chunk) < payloadChunk/16 {
		ps.chunk = make([]byte, 0, payloadChunk)
	}
	start := len(ps.chunk)
	// A payload larger than what is left moves the chunk, with the
	// payloads already in it: their strings keep the old array.
	ps.chunk = a(ps.chunk, rv.UnsafePointer())
	n := len(ps.chunk) - start
	if n == 0 {
		return "", nil
	}
	// The chunk's bytes up to its length are never written again.
	return unsafe.String(&ps.chunk[start], n), nil
}

func appenderOf(t reflect.Type) appender {
	if a, ok := appenders.Load(t); ok {
		return a.(appender)
	}
	a := structAppender(t)
	appenders.Store(t, a)
	return a
}

// field is a field of the JSON object of a struct: its key and where it is
// from the struct's start, through embedded structs.
type field struct {
	key    []byte // `"Name":`, after a comma for every field but the first
	offset uintptr
	app    appender
}

// structAppender builds the appender of struct type t, or nil when t has
// something it does not render as encoding/json does. It reads each field
// at its offset rather than through reflect.Value's Field and String,
// which were most of the rendering's CPU (profiled with pprof,
// BenchmarkTakeRecords): the types it takes are checked when it is built,
// and the events are not written while they are rendered.
func structAppender(t reflect.Type) appender {
	if t.Kind() != reflect.Struct || marshalsItself(t) {
		return nil
	}
	var fields []field
	names := map[string]bool{}
	var walk func(t reflect.Type, base uintptr) bool
	walk = func(t reflect.Type, base uintptr) bool {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Tag.Get("json") != "" {
				return false
			}
			if !f.IsExported() {
				if f.Anonymous {
					return false
				}
				continue
			}
			if f.Anonymous {
				if f.Type.Kind() != reflect.Struct || !walk(f.Type, base+f.Offset) {
					return false
				}
				continue
			}
			if names[f.Name] {
				return false // encoding/json's rules for clashing names are not reproduced
			}
			names[f.Name] = true
			app := valueAppender(f.Type)
			if app == nil {
				return false
			}
			key := strconv.Quote(f.Name) + ":"
			if len(fields) > 0 {
				key = "," + key
			}
			fields = append(fields, field{key: []byte(key), offset: base + f.Offset, app: app})
		}
		return true
	}
	if !walk(t, 0) {
		return nil
	}
	return func(dst []byte, p unsafe.Pointer) []byte {
		dst = append(dst, '{')
		for _, f := range fields {
			dst = append(dst, f.key...)
			dst = f.app(dst, unsafe.Add(p, f.offset))
		}
		return append(dst, '}')
	}
}

// valueAppender builds the appender of a field of type t, or nil.
func valueAppender(t reflect.Type) appender {
	if marshalsItself(t) {
		return nil
	}
	if a, ok := numberAppenders[t.Kind()]; ok {
		return a
	}
	switch t.Kind() {
	case reflect.String:
		return func(dst []byte, p unsafe.Pointer) []byte { return appendJSONString(dst, *(*string)(p)) }
	case reflect.Bool:
		return func(dst []byte, p unsafe.Pointer) []byte { return strconv.AppendBool(dst, *(*bool)(p)) }
	case reflect.Slice:
		if t.Elem() != reflect.TypeFor[string]() {
			return nil // []byte is base64, named element types may marshal themselves
		}
		return func(dst []byte, p unsafe.Pointer) []byte {
			ss := *(*[]string)(p)
			if ss == nil {
				return append(dst, "null"...)
			}
			dst = append(dst, '[')
			for i, s := range ss {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSONString(dst, s)
			}
			return append(dst, ']')
		}
	case reflect.Struct:
		return structAppender(t)
	}
	return nil
}

// numberAppenders render the integer kinds as encoding/json does; a type
// with a field of another kind is rendered by encoding/json.
var numberAppenders = map[reflect.Kind]appender{
	reflect.Int: intAppender[int], reflect.Int8: intAppender[int8], reflect.Int16: intAppender[int16],
	reflect.Int32: intAppender[int32], reflect.Int64: intAppender[int64],
	reflect.Uint: uintAppender[uint], reflect.Uint16: uintAppender[uint16], reflect.Uint32: uintAppender[uint32],
	reflect.Uint64: uintAppender[uint64],
}

func intAppender[T int | int8 | int16 | int32 | int64](dst []byte, p unsafe.Pointer) []byte {
	return strconv.AppendInt(dst, int64(*(*T)(p)), 10)
}

func uintAppender[T uint | uint16 | uint32 | uint64](dst []byte, p unsafe.Pointer) []byte {
	return strconv.AppendUint(dst, uint64(*(*T)(p)), 10)
}

// marshalsItself reports whether encoding/json leaves t's rendering to t.
func marshalsItself(t reflect.Type) bool {
	for _, i := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

// plainJSON marks the bytes appendJSONString copies as they are: ASCII
// but control characters, quote, backslash and the HTML-unsafe <, >, &.
var plainJSON = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return plain
}()

// appendJSONString appends s quoted as encoding/json quotes it (HTML-safe):
// ASCII is escaped here as it escapes it; a string with any other byte
// goes through encoding/json, which also replaces invalid UTF-8 and escapes
// U+2028 and U+2029.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	mark := len(dst)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plainJSON[c] {
			continue
		}
		if c >= utf8.RuneSelf {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst[:mark], b...)
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
