package vm

import (
	"reflect"
	"testing"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// TestCloneSharesNothing: a record with every slice, map and pointer set,
// at every depth, and its clone hold no backing array, map or pointed-to
// value in common, so a flow changing the working copy in place (notOn
// deleting from MaybeOn) never reaches the state it came from, which
// advanceCancelled puts back.
func TestCloneSharesNothing(t *testing.T) {
	s := testkit.Filled(reflect.TypeFor[schemas.VmRecord]()).Addr().Interface().(*schemas.VmRecord)
	c := clone(s)
	if !reflect.DeepEqual(s, c) {
		t.Fatal("the clone differs from its record")
	}
	shared(t, "VmRecord", reflect.ValueOf(s).Elem(), reflect.ValueOf(c).Elem())
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
