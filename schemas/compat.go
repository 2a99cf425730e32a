package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
)

// node is a parsed Avro schema, with named references resolved.
type node struct {
	kind   string // primitive name, record, array, map
	name   string
	fields []nodeField
	items  *node
}

type nodeField struct {
	name       string
	typ        *node
	hasDefault bool
}

func parseSchema(text string) (*node, error) {
	var raw any
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, err
	}
	return parseNode(raw, map[string]*node{})
}

func shortName(n string) string {
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		return n[i+1:]
	}
	return n
}

func parseNode(raw any, named map[string]*node) (*node, error) {
	switch r := raw.(type) {
	case string:
		switch r {
		case "null", "boolean", "int", "long", "float", "double", "bytes", "string":
			return &node{kind: r}, nil
		}
		if n, ok := named[shortName(r)]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("unknown type %q", r)
	case map[string]any:
		switch t, _ := r["type"].(string); t {
		case "record":
			name, _ := r["name"].(string)
			n := &node{kind: "record", name: shortName(name)}
			named[n.name] = n
			fs, _ := r["fields"].([]any)
			for _, f := range fs {
				fm, _ := f.(map[string]any)
				fname, _ := fm["name"].(string)
				ft, err := parseNode(fm["type"], named)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: %w", n.name, fname, err)
				}
				_, hasDef := fm["default"]
				n.fields = append(n.fields, nodeField{name: fname, typ: ft, hasDefault: hasDef})
			}
			return n, nil
		case "array":
			it, err := parseNode(r["items"], named)
			return &node{kind: "array", items: it}, err
		case "map":
			it, err := parseNode(r["values"], named)
			return &node{kind: "map", items: it}, err
		case "":
			return nil, fmt.Errorf("schema object without type")
		default:
			return parseNode(t, named)
		}
	case []any:
		return nil, fmt.Errorf("unions are not used in vmplane schemas")
	}
	return nil, fmt.Errorf("unexpected schema %T", raw)
}

func recordName(text string) string {
	n, err := parseSchema(text)
	if err != nil {
		return ""
	}
	return n.name
}

var promotions = map[string][]string{
	"int":    {"long", "float", "double"},
	"long":   {"float", "double"},
	"float":  {"double"},
	"string": {"bytes"},
	"bytes":  {"string"},
}

// CheckBackward reports whether data written with writer can be read with
// reader under Avro's schema resolution rules (BACKWARD compatibility of
// reader against writer). It returns nil when it can.
func CheckBackward(reader, writer string) error {
	r, err := parseSchema(reader)
	if err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	w, err := parseSchema(writer)
	if err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	return resolve(r, w, r.name, map[[2]*node]bool{})
}

func resolve(r, w *node, path string, seen map[[2]*node]bool) error {
	if seen[[2]*node{r, w}] {
		return nil
	}
	seen[[2]*node{r, w}] = true
	if r.kind != w.kind {
		for _, p := range promotions[w.kind] {
			if p == r.kind {
				return nil
			}
		}
		return fmt.Errorf("%s: %s written, %s read", path, w.kind, r.kind)
	}
	switch r.kind {
	case "record":
		if r.name != w.name {
			return fmt.Errorf("%s: record %s written, %s read", path, w.name, r.name)
		}
		for _, rf := range r.fields {
			var wf *nodeField
			for i := range w.fields {
				if w.fields[i].name == rf.name {
					wf = &w.fields[i]
				}
			}
			if wf == nil {
				if !rf.hasDefault {
					return fmt.Errorf("%s.%s: new field without a default", path, rf.name)
				}
				continue
			}
			if err := resolve(rf.typ, wf.typ, path+"."+rf.name, seen); err != nil {
				return err
			}
		}
	case "array", "map":
		return resolve(r.items, w.items, path+"[]", seen)
	}
	return nil
}
