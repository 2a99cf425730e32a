package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOpenAPIRequiredIsWhatTheServerRequires: a field the document says a
// request body requires is one the server refuses the body without, and
// no other. Each route of the matrix that takes a body is sent its valid
// body (which must succeed: a field it lacks is not required), then the
// body without each of its fields in turn, also inside arrays of objects,
// and an empty object: without a required field (or without both names of
// a field taken under two), or with fewer fields than minProperties, it is
// refused (400 or 422), and otherwise it succeeds. Each request goes to a fresh stack, so that one create does
// not make the next a conflict.
func TestOpenAPIRequiredIsWhatTheServerRequires(t *testing.T) {
	var doc struct {
		Paths      map[string]map[string]operation `json:"paths"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	rec := answersEnv(t).do("GET", "/v1/openapi.json", "", nil)
	wantStatus(t, rec, http.StatusOK)
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(s any) map[string]any {
		m, _ := s.(map[string]any)
		if r, ok := m["$ref"].(string); ok {
			return doc.Components.Schemas[strings.TrimPrefix(r, "#/components/schemas/")]
		}
		return m
	}
	for _, r := range matrixRoutes {
		if r.body == "" {
			continue
		}
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			op := doc.Paths[r.path][strings.ToLower(r.method)]
			status, _ := op.success()
			schema := resolve(op.RequestBody.Content["application/json"].Schema)
			if schema == nil {
				t.Fatalf("the document has no request body")
			}
			send := func(body any) (int, string) {
				e := answersEnv(t)
				raw, err := json.Marshal(body)
				if err != nil {
					t.Fatal(err)
				}
				rec := e.do(r.method, r.fill("acct-a", e), e.admin, string(raw))
				return rec.Code, rec.Body.String()
			}
			valid := jsonOf(t, []byte(r.body))
			if code, body := send(valid); strconv.Itoa(code) != status {
				t.Fatalf("the valid body %s: %d %s, want %s", r.body, code, body, status)
			}
			// An empty object is refused exactly when the document
			// requires a field or asks for one at least.
			empty := without{"every field", refusedBy(schema, map[string]any{}), map[string]any{}}
			for _, c := range append(withoutEachField(valid, schema, resolve, ""), empty) {
				code, body := send(c.body)
				refused := code == http.StatusBadRequest || code == http.StatusUnprocessableEntity
				switch {
				case c.required && !refused:
					t.Errorf("without %s, which the document requires: %d %s, want 400 or 422", c.field, code, body)
				case !c.required && strconv.Itoa(code) != status:
					t.Errorf("without %s, which the document does not require: %d %s, want %s", c.field, code, body, status)
				}
			}
		})
	}
}

// without is a request body less one field, and whether the document
// requires that field.
type without struct {
	field    string
	required bool
	body     any
}

// withoutEachField lists v less each of its fields in turn, at any depth
// of objects and arrays of objects, with what schema says of each.
func withoutEachField(v any, schema map[string]any, resolve func(any) map[string]any, at string) []without {
	obj, ok := v.(map[string]any)
	if !ok || schema == nil {
		return nil
	}
	props, _ := schema["properties"].(map[string]any)
	var out []without
	for _, k := range sortedKeys(obj) {
		less := cloneObject(obj)
		delete(less, k)
		out = append(out, without{at + k, refusedBy(schema, less), less})
		prop := resolve(props[k])
		switch x := obj[k].(type) {
		case map[string]any:
			for _, inner := range withoutEachField(x, prop, resolve, at+k+".") {
				whole := cloneObject(obj)
				whole[k] = inner.body
				out = append(out, without{inner.field, inner.required, whole})
			}
		case []any:
			for i, el := range x {
				for _, inner := range withoutEachField(el, resolve(prop["items"]), resolve, fmt.Sprintf("%s%s[%d].", at, k, i)) {
					whole := cloneObject(obj)
					arr := slices.Clone(x)
					arr[i] = inner.body
					whole[k] = arr
					out = append(out, without{inner.field, inner.required, whole})
				}
			}
		}
	}
	return out
}

// refusedBy says whether schema refuses obj for its fields: one required
// missing, fewer than minProperties, or none of an anyOf's alternatives of
// required fields (a field under two names) all there.
func refusedBy(schema map[string]any, obj map[string]any) bool {
	has := func(names []any) bool {
		for _, n := range names {
			if _, ok := obj[fmt.Sprint(n)]; !ok {
				return false
			}
		}
		return true
	}
	minProps, _ := schema["minProperties"].(float64)
	if !has(anySlice(schema["required"])) || float64(len(obj)) < minProps {
		return true
	}
	groups := anySlice(schema["allOf"])
	if alts := anySlice(schema["anyOf"]); alts != nil {
		groups = append(groups, map[string]any{"anyOf": alts})
	}
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		if !slices.ContainsFunc(anySlice(gm["anyOf"]), func(alt any) bool {
			am, _ := alt.(map[string]any)
			return has(anySlice(am["required"]))
		}) {
			return true
		}
	}
	return false
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

func cloneObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
