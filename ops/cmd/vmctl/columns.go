package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// answer is an API answer as records whose fields keep the API's order:
// what -c picks from and -o value and a plain table print.
type answer struct {
	list bool     // an array: one record per item
	rows []record // one, for an object
}

// record is one JSON object, its fields in order.
type record struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseAnswer(raw json.RawMessage) (answer, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return answer{}, err
		}
		v := answer{list: true, rows: make([]record, len(items))}
		for i, it := range items {
			r, err := parseRecord(it)
			if err != nil {
				return answer{}, err
			}
			v.rows[i] = r
		}
		return v, nil
	}
	r, err := parseRecord(raw)
	return answer{rows: []record{r}}, err
}

// parseRecord reads an object's fields in order; anything else is one
// field, value.
func parseRecord(raw json.RawMessage) (record, error) {
	r := record{vals: map[string]json.RawMessage{}}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		r.keys, r.vals["value"] = []string{"value"}, raw
		return r, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return r, err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return r, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return r, err
		}
		if _, dup := r.vals[k]; !dup {
			r.keys = append(r.keys, k)
		}
		r.vals[k] = v
	}
	return r, nil
}

// check refuses a column that is neither a field of the wire type nor in
// the answer (a field left out when empty is still a column).
func (v answer) check(cols, known []string) error {
	for _, r := range v.rows {
		for _, k := range r.keys {
			if !slices.Contains(known, k) {
				known = append(known, k)
			}
		}
	}
	for _, c := range cols {
		if !slices.Contains(known, c) {
			if len(known) == 0 {
				return fmt.Errorf("%w: unknown column %q: the answer has no fields", errUsage, c)
			}
			return fmt.Errorf("%w: unknown column %q; columns: %s", errUsage, c, strings.Join(known, ", "))
		}
	}
	return nil
}

// project keeps the fields cols of each record, in that order; one a
// record lacks is null.
func (v answer) project(cols []string) answer {
	out := answer{list: v.list, rows: make([]record, len(v.rows))}
	for i, r := range v.rows {
		p := record{keys: cols, vals: map[string]json.RawMessage{}}
		for _, c := range cols {
			val, ok := r.vals[c]
			if !ok {
				val = json.RawMessage("null")
			}
			p.vals[c] = val
		}
		out.rows[i] = p
	}
	return out
}

// json writes the answer back as JSON, fields in order.
func (v answer) json() json.RawMessage {
	var b bytes.Buffer
	obj := func(r record) {
		b.WriteByte('{')
		for i, k := range r.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			b.Write(r.vals[k])
		}
		b.WriteByte('}')
	}
	if !v.list {
		obj(v.rows[0])
		return b.Bytes()
	}
	b.WriteByte('[')
	for i, r := range v.rows {
		if i > 0 {
			b.WriteByte(',')
		}
		obj(r)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// values prints the bare values: a list a line per row, separated by
// spaces; an object a line per field.
func (v answer) values(w io.Writer) error {
	var b strings.Builder
	for _, r := range v.rows {
		cells := make([]string, len(r.keys))
		for i, k := range r.keys {
			cells[i] = cell(r.vals[k])
		}
		sep := " "
		if !v.list {
			sep = "\n"
		}
		if len(cells) > 0 {
			b.WriteString(strings.Join(cells, sep) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// table prints a list as a table headed by its field names, an object as
// a field per line.
func (v answer) table(w io.Writer) {
	if !v.list {
		for _, k := range v.rows[0].keys {
			fmt.Fprintf(w, "%s:\t%s\n", k, orDash(cell(v.rows[0].vals[k])))
		}
		return
	}
	if len(v.rows) == 0 {
		return
	}
	keys := v.rows[0].keys
	fmt.Fprintln(w, strings.ToUpper(strings.Join(keys, "\t")))
	for _, r := range v.rows {
		cells := make([]string, len(keys))
		for i, k := range keys {
			cells[i] = orDash(cell(r.vals[k]))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
}

// cell is a field's value as text: a string bare, null empty, a list of
// plain values comma-separated, anything else compact JSON.
func cell(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return ""
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.ReplaceAll(s, "\n", " ")
		}
	case raw[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			parts := make([]string, len(items))
			for i, it := range items {
				if t := bytes.TrimSpace(it); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
					return compact(raw)
				}
				parts[i] = cell(it)
			}
			return strings.Join(parts, ",")
		}
	case raw[0] == '{':
		return compact(raw)
	}
	return string(raw)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// fieldsOf are the JSON names of a wire type's fields, in order: the
// columns -c may name. nil for no type.
func fieldsOf(v any) []string {
	if v == nil {
		return nil
	}
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			switch {
			case name == "-" || !f.IsExported():
			case f.Anonymous && name == "":
				walk(f.Type)
			case name == "":
				names = append(names, f.Name)
			default:
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeOf(v))
	return names
}

// toYAML turns JSON into block-style YAML, keeping the fields' order and
// types: the JSON is read as YAML (which it is) and its styles cleared.
func toYAML(raw json.RawMessage) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, err
	}
	var plain func(n *yaml.Node)
	plain = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
