package gateway

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// The edge holds requests to the records' rules (schemas/strings.go): every
// string of a body and of the query is text, and every body field named
// id, *_id or *_ids holds ids. A request that breaks them is refused here
// with the field named, before it can become a record that every consumer
// would have to dead-letter.

// checkStrings walks a decoded request body.
func checkStrings(v reflect.Value, path string) *apiError {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkStrings(v.Elem(), path)
		}
	case reflect.Struct:
		return checkFields(v, path)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := range v.Len() {
			if e := checkStrings(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); e != nil {
				return e
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if k := iter.Key(); k.Kind() == reflect.String {
				if err := schemas.CheckText(k.String()); err != nil {
					return fieldError(path, "a key of field %q is not text: %v", path, err)
				}
			}
			if e := checkStrings(iter.Value(), path); e != nil {
				return e
			}
		}
	case reflect.String:
		if err := schemas.CheckText(v.String()); err != nil {
			return fieldError(path, "field %q is not text: %v", path, err)
		}
	}
	return nil
}

// checkFields walks a struct's fields by their JSON names: an id field
// holds ids, any other text.
func checkFields(v reflect.Value, path string) *apiError {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		check := checkStrings
		if schemas.IsIDField(name) {
			check = checkIDs
		}
		if e := check(v.Field(i), joinField(path, name)); e != nil {
			return e
		}
	}
	return nil
}

// checkIDs holds an id field, a string or a list of them, to the id rule.
func checkIDs(v reflect.Value, path string) *apiError {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkIDs(v.Elem(), path)
		}
	case reflect.String:
		if err := schemas.CheckID(v.String()); err != nil {
			return fieldError(path, "field %q is not an id: %v", path, err)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if e := checkIDs(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); e != nil {
				return e
			}
		}
	default:
		return checkStrings(v, path)
	}
	return nil
}

func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkQuery refuses a query string whose names or values are not text:
// filters and cursors reach Postgres, which refuses NUL and invalid UTF-8.
func checkQuery(r *http.Request) error {
	if !strings.Contains(r.URL.RawQuery, "%") && schemas.CheckText(r.URL.RawQuery) == nil {
		return nil
	}
	for name, values := range r.URL.Query() {
		if err := schemas.CheckText(name); err != nil {
			return errorf(http.StatusBadRequest, codeInvalidRequest, "a query parameter name is not text: %v", err)
		}
		for _, v := range values {
			if err := schemas.CheckText(v); err != nil {
				e := errorf(http.StatusBadRequest, codeInvalidRequest, "query parameter %q is not text: %v", clip(name, 40), err)
				e.Details = map[string]any{"parameter": clip(name, 40)}
				return e
			}
		}
	}
	return nil
}
