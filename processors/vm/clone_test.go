package vm

import (
	"reflect"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// TestCloneSharesNothing: a record with every slice, map and pointer set,
// at every depth, and its clone hold no backing array, map or pointed-to
// value in common, so a flow changing the working copy in place (notOn
// deleting from MaybeOn) never reaches the state it came from, which
// advanceCancelled puts back.
func TestCloneSharesNothing(t *testing.T) {
	s := &schemas.VmRecord{}
	fill(reflect.ValueOf(s).Elem())
	c := clone(s)
	if !reflect.DeepEqual(s, c) {
		t.Fatal("the clone differs from its record")
	}
	shared(t, "VmRecord", reflect.ValueOf(s).Elem(), reflect.ValueOf(c).Elem())
}

// fill sets every field of v, recursively: a slice or map of one element,
// a pointer to a filled value, a non-zero scalar.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}

// shared fails for every slice, map or pointer of a and b, at the same
// path, that is the same one.
func shared(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				shared(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
			}
		}
	case reflect.Pointer:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the pointer", path)
			return
		}
		if !a.IsNil() && !b.IsNil() {
			shared(t, path, a.Elem(), b.Elem())
		}
	case reflect.Slice:
		if a.Len() > 0 && b.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the slice's array", path)
			return
		}
		for i := range min(a.Len(), b.Len()) {
			shared(t, path+"[]", a.Index(i), b.Index(i))
		}
	case reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the map", path)
		}
	}
}
