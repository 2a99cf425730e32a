package schemas

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Namespace is the Avro namespace of every vmplane record.
const Namespace = "vmplane"

type avroRecord struct {
	Type      string      `json:"type"`
	Name      string      `json:"name"`
	Namespace string      `json:"namespace,omitempty"`
	Doc       string      `json:"doc,omitempty"`
	Fields    []avroField `json:"fields"`
}

type avroField struct {
	Name    string `json:"name"`
	Type    any    `json:"type"`
	Default any    `json:"default"`
	Doc     string `json:"doc"`
}

// field is one Avro field of a Go struct, with embedded structs and inline
// parts flattened.
type field struct {
	name  string
	doc   string
	index []int
	typ   reflect.Type
	// intern says that the field's strings, or its one-entry long maps,
	// are few values that many records share (tag intern:"true"), which
	// the decoder reads as one copy each (intern.go).
	intern bool
}

// An inline part (a field tagged avro:",inline", a pointer to a struct)
// keeps rarely set fields of a record out of line: its fields are the
// record's own, on the wire as in the schema, each placed after the field
// its tag after:"<avro name>" names, and a nil part reads and writes as all
// of them zero. A record thus keeps what most of its values leave zero in
// one allocation that most of them never make, without a change of schema
// or bytes (see VmRecord). A field inside a part reaches through the
// pointer: read it with FieldByIndexErr, set it with fieldToSet.

// inlinePart says whether f is an inline part.
func inlinePart(f reflect.StructField) bool {
	_, opt, _ := strings.Cut(f.Tag.Get("avro"), ",")
	if opt != "inline" {
		return false
	}
	if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("schemas: inline field %s is not a pointer to a struct", f.Name))
	}
	return true
}

// fieldsOf lists the Avro fields of struct type t in their schema order.
func fieldsOf(t reflect.Type) []field {
	var out, parts []field
	var after []string
	var walk func(t reflect.Type, prefix []int, inPart bool)
	walk = func(t reflect.Type, prefix []int, inPart bool) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			idx := append(append([]int(nil), prefix...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx, inPart)
				continue
			}
			if inlinePart(f) {
				if inPart {
					panic(fmt.Sprintf("schemas: inline part %s.%s inside another", t.Name(), f.Name))
				}
				walk(f.Type.Elem(), idx, true)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("avro"), ",")
			if name == "" {
				panic(fmt.Sprintf("schemas: %s.%s has no avro tag", t.Name(), f.Name))
			}
			fd := field{name: name, doc: f.Tag.Get("doc"), index: idx, typ: f.Type, intern: f.Tag.Get("intern") == "true"}
			if !inPart {
				out = append(out, fd)
				continue
			}
			a := f.Tag.Get("after")
			if a == "" {
				panic(fmt.Sprintf("schemas: %s.%s is in an inline part but has no after tag", t.Name(), f.Name))
			}
			parts, after = append(parts, fd), append(after, a)
		}
	}
	walk(t, nil, false)
	for i, fd := range parts {
		at := slices.IndexFunc(out, func(f field) bool { return f.name == after[i] })
		if at < 0 {
			panic(fmt.Sprintf("schemas: %s: field %s comes after %s, which %s lacks", t.Name(), fd.name, after[i], t.Name()))
		}
		out = slices.Insert(out, at+1, fd)
	}
	return out
}

// Field is one Avro field of a Go struct type: its name and the index path
// of its Go field, for reflect's FieldByIndexErr (the path of a field in an
// inline part goes through the part's pointer, nil while the part is).
type Field struct {
	Name  string
	Index []int
}

// Fields lists the Avro fields of struct type t in schema order, embedded
// structs and inline parts flattened: for tools and tests that show or set
// a record's fields by their Avro names.
func Fields(t reflect.Type) []Field {
	var out []Field
	for _, f := range cachedFields(t) {
		out = append(out, Field{Name: f.name, Index: f.index})
	}
	return out
}

// fieldToSet returns the field at index of the struct v, making the inline
// part it lies in if v has none yet.
func fieldToSet(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// dropZeroParts sets every inline part of the struct v that holds only
// zero values back to nil, as the direct decoder leaves it.
func dropZeroParts(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		switch {
		case sf.Anonymous && sf.Type.Kind() == reflect.Struct:
			dropZeroParts(f)
		case inlinePart(sf) && !f.IsNil() && f.Elem().IsZero():
			f.SetZero()
		}
	}
}

// schemaOf renders the Avro schema of struct type t as indented JSON.
func schemaOf(t reflect.Type, doc string) string {
	defined := map[string]bool{}
	rec := recordSchema(t, doc, defined)
	rec.Namespace = Namespace
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func recordSchema(t reflect.Type, doc string, defined map[string]bool) avroRecord {
	defined[t.Name()] = true
	rec := avroRecord{Type: "record", Name: t.Name(), Doc: doc}
	for _, f := range fieldsOf(t) {
		if f.doc == "" {
			panic(fmt.Sprintf("schemas: %s.%s has no doc", t.Name(), f.name))
		}
		rec.Fields = append(rec.Fields, avroField{
			Name:    f.name,
			Type:    typeSchema(f.typ, defined),
			Default: defaultOf(f.typ),
			Doc:     f.doc,
		})
	}
	return rec
}

func typeSchema(t reflect.Type, defined map[string]bool) any {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int32:
		return "int"
	case reflect.Int64:
		return "long"
	case reflect.Float64:
		return "double"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return map[string]any{"type": "array", "items": typeSchema(t.Elem(), defined)}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic("schemas: map keys must be strings")
		}
		return map[string]any{"type": "map", "values": typeSchema(t.Elem(), defined)}
	case reflect.Struct:
		if defined[t.Name()] {
			return t.Name()
		}
		return recordSchema(t, "Embedded "+t.Name()+".", defined)
	case reflect.Pointer:
		return typeSchema(t.Elem(), defined)
	}
	panic(fmt.Sprintf("schemas: unsupported Go type %s", t))
}

// defaultOf is the Avro default of a field of Go type t: its zero value.
func defaultOf(t reflect.Type) any {
	switch t.Kind() {
	case reflect.String:
		return ""
	case reflect.Bool:
		return false
	case reflect.Int32, reflect.Int64:
		return 0
	case reflect.Float64:
		return 0.0
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return ""
		}
		return []any{}
	case reflect.Map:
		return map[string]any{}
	case reflect.Struct:
		m := map[string]any{}
		for _, f := range fieldsOf(t) {
			m[f.name] = defaultOf(f.typ)
		}
		return m
	case reflect.Pointer:
		return defaultOf(t.Elem())
	}
	panic(fmt.Sprintf("schemas: unsupported Go type %s", t))
}

// fromNative fills the Go value v from goavro's native form.
func fromNative(n any, v reflect.Value, path string) error {
	bad := func() error { return fmt.Errorf("field %s: unexpected %T for %s", path, n, v.Type()) }
	switch v.Kind() {
	case reflect.Struct:
		m, ok := n.(map[string]any)
		if !ok {
			return bad()
		}
		return structFromNative(m, v, path)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b, ok := n.([]byte)
			if !ok {
				return bad()
			}
			v.SetBytes(append([]byte(nil), b...))
			return nil
		}
		a, ok := n.([]any)
		if !ok {
			return bad()
		}
		return sliceFromNative(a, v, path)
	case reflect.Map:
		m, ok := n.(map[string]any)
		if !ok {
			return bad()
		}
		return mapFromNative(m, v, path)
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if err := fromNative(n, e.Elem(), path); err != nil {
			return err
		}
		if !e.Elem().IsZero() {
			v.Set(e)
		}
	case reflect.String:
		s, ok := n.(string)
		if !ok {
			return bad()
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := n.(bool)
		if !ok {
			return bad()
		}
		v.SetBool(b)
	case reflect.Int32, reflect.Int64:
		switch x := n.(type) {
		case int32:
			v.SetInt(int64(x))
		case int64:
			v.SetInt(x)
		default:
			return bad()
		}
	case reflect.Float64:
		switch x := n.(type) {
		case float64:
			v.SetFloat(x)
		case float32:
			v.SetFloat(float64(x))
		default:
			return bad()
		}
	default:
		return bad()
	}
	return nil
}

// structFromNative fills the struct v from a record's fields m; fields
// that m lacks are left as they are.
func structFromNative(m map[string]any, v reflect.Value, path string) error {
	for _, f := range cachedFields(v.Type()) {
		fv, ok := m[f.name]
		if !ok {
			continue
		}
		if err := fromNative(fv, fieldToSet(v, f.index), joinPath(path, f.name)); err != nil {
			return err
		}
	}
	dropZeroParts(v)
	return nil
}

// sliceFromNative fills the slice v from an array's items a; an empty
// array leaves v nil.
func sliceFromNative(a []any, v reflect.Value, path string) error {
	if len(a) == 0 {
		return nil
	}
	s := reflect.MakeSlice(v.Type(), len(a), len(a))
	for i, e := range a {
		if err := fromNative(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// mapFromNative fills the map v from a map's entries m; an empty map
// leaves v nil.
func mapFromNative(m map[string]any, v reflect.Value, path string) error {
	if len(m) == 0 {
		return nil
	}
	out := reflect.MakeMapWithSize(v.Type(), len(m))
	for k, e := range m {
		ev := reflect.New(v.Type().Elem()).Elem()
		if err := fromNative(e, ev, path+"."+k); err != nil {
			return err
		}
		out.SetMapIndex(reflect.ValueOf(k), ev)
	}
	v.Set(out)
	return nil
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return strings.Join([]string{a, b}, ".")
}
