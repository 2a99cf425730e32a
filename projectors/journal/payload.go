package journal

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
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

// appender appends the JSON of the value v points at.
type appender func(dst []byte, v reflect.Value) []byte

var appenders sync.Map // reflect.Type → appender, nil when encoding/json renders the type

// payloadBufs are the buffers payloads are rendered in before their copy
// into a string.
var payloadBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// renderPayload is the JSON text of an event.
func renderPayload(v any) (string, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		if a := appenderOf(rv.Type().Elem()); a != nil {
			bp := payloadBufs.Get().(*[]byte)
			*bp = a((*bp)[:0], rv.Elem())
			out := string(*bp)
			payloadBufs.Put(bp)
			return out, nil
		}
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func appenderOf(t reflect.Type) appender {
	if a, ok := appenders.Load(t); ok {
		return a.(appender)
	}
	a := structAppender(t)
	appenders.Store(t, a)
	return a
}

// field is a field of the JSON object of a struct: its key and the index
// path to it through embedded structs.
type field struct {
	key   []byte // `"Name":`, after the comma for every field but the first
	index []int
	app   appender
}

// structAppender builds the appender of struct type t, or nil when t has
// something it does not render as encoding/json does.
func structAppender(t reflect.Type) appender {
	if t.Kind() != reflect.Struct || marshalsItself(t) {
		return nil
	}
	var fields []field
	names := map[string]bool{}
	var walk func(t reflect.Type, index []int) bool
	walk = func(t reflect.Type, index []int) bool {
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
			idx := append(append([]int(nil), index...), i)
			if f.Anonymous {
				if f.Type.Kind() != reflect.Struct || !walk(f.Type, idx) {
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
			fields = append(fields, field{key: []byte(strconv.Quote(f.Name) + ":"), index: idx, app: app})
		}
		return true
	}
	if !walk(t, nil) {
		return nil
	}
	return func(dst []byte, v reflect.Value) []byte {
		dst = append(dst, '{')
		for i, f := range fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, f.key...)
			fv := v.Field(f.index[0])
			for _, j := range f.index[1:] {
				fv = fv.Field(j)
			}
			dst = f.app(dst, fv)
		}
		return append(dst, '}')
	}
}

func valueAppender(t reflect.Type) appender {
	if marshalsItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		return func(dst []byte, v reflect.Value) []byte { return appendJSONString(dst, v.String()) }
	case reflect.Bool:
		return func(dst []byte, v reflect.Value) []byte { return strconv.AppendBool(dst, v.Bool()) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(dst []byte, v reflect.Value) []byte { return strconv.AppendInt(dst, v.Int(), 10) }
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(dst []byte, v reflect.Value) []byte { return strconv.AppendUint(dst, v.Uint(), 10) }
	case reflect.Slice:
		if t.Elem().Kind() != reflect.String || t.Elem() != reflect.TypeFor[string]() {
			return nil // []byte is base64, named element types may marshal themselves
		}
		return func(dst []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(dst, "null"...)
			}
			dst = append(dst, '[')
			for i := range v.Len() {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSONString(dst, v.Index(i).String())
			}
			return append(dst, ']')
		}
	case reflect.Struct:
		return structAppender(t)
	}
	return nil
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
		if c >= utf8.RuneSelf {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst[:mark], b...)
		}
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
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
