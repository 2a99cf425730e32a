package gateway

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/internal/testkit"
)

// TestOpenAPISchemasAreTheWire: every type a route of the document takes or
// answers is package api's, and its schema names exactly the fields
// encoding/json writes of it: each one when every field is set, and no
// required one missing when none is. The error answer's too.
func TestOpenAPISchemasAreTheWire(t *testing.T) {
	comps := map[string]any{}
	check := func(where string, typ reflect.Type, request bool) {
		t.Helper()
		if typ.PkgPath() != reflect.TypeFor[api.VM]().PkgPath() {
			t.Errorf("%s: %s is not a type of package api", where, typ)
		}
		schema := schemaOf(typ, comps)
		if request {
			schema = requestSchemaOf(typ, comps)
		}
		for _, c := range []struct {
			what  string
			value reflect.Value
			exact bool
		}{{"every field set", testkit.Filled(typ), true}, {"no field set", reflect.Zero(typ), false}} {
			raw, err := json.Marshal(c.value.Interface())
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			for _, e := range MatchSchema(comps, schema, v, c.exact) {
				t.Errorf("%s, %s, %s: %s", where, typ, c.what, e)
			}
		}
	}
	for _, op := range apiOps {
		for i, v := range []any{op.body, op.resp, op.alt} {
			if v != nil {
				check(op.method+" "+op.path, reflect.TypeOf(v), i == 0)
			}
		}
	}
	check("an error answer", reflect.TypeFor[api.ErrorResponse](), false)
}

// MatchSchema lists where v, a decoded JSON value, and schema, a schema of
// the document whose references point into comps, disagree on field names:
// a field the schema lacks, a required field v lacks and, when exact, any
// field of the schema v lacks. An anyOf matches when one of its schemas
// does. Types of values are not compared: the document says string where
// a null may stand.
func MatchSchema(comps map[string]any, schema, v any, exact bool) []string {
	return matchAt("", comps, schema, v, exact)
}

func matchAt(at string, comps map[string]any, schema, v any, exact bool) []string {
	s, _ := schema.(map[string]any)
	if r, ok := s["$ref"].(string); ok {
		s, _ = comps[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
		if s == nil {
			return []string{fmt.Sprintf("%s: no schema %s", orTop(at), r)}
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var all []string
		for i, alt := range alts {
			errs := matchAt(at, comps, alt, v, exact)
			if len(errs) == 0 {
				return nil
			}
			all = append(all, fmt.Sprintf("anyOf[%d]: %s", i, strings.Join(errs, "; ")))
		}
		return all
	}
	var errs []string
	switch v := v.(type) {
	case map[string]any:
		props, ok := s["properties"].(map[string]any)
		if !ok {
			if each, ok := s["additionalProperties"].(map[string]any); ok {
				for k, e := range v {
					errs = append(errs, matchAt(at+"."+k, comps, each, e, exact)...)
				}
			}
			return errs
		}
		for k, e := range v {
			if p, ok := props[k]; ok {
				errs = append(errs, matchAt(at+"."+k, comps, p, e, exact)...)
			} else {
				errs = append(errs, fmt.Sprintf("%s: field %q is not in the schema", orTop(at), k))
			}
		}
		// required is a []string in the document as built, a []any as
		// served and decoded.
		req, _ := s["required"].([]string)
		if served, ok := s["required"].([]any); ok {
			for _, r := range served {
				req = append(req, fmt.Sprint(r))
			}
		}
		for k := range props {
			_, has := v[k]
			switch {
			case !has && slices.Contains(req, k):
				errs = append(errs, fmt.Sprintf("%s: required field %q is missing", orTop(at), k))
			case !has && exact:
				errs = append(errs, fmt.Sprintf("%s: field %q of the schema is not written", orTop(at), k))
			}
		}
	case []any:
		for i, e := range v {
			errs = append(errs, matchAt(fmt.Sprintf("%s[%d]", at, i), comps, s["items"], e, exact)...)
		}
	}
	slices.Sort(errs)
	return errs
}

func orTop(at string) string {
	if at == "" {
		return "the body"
	}
	return at
}
