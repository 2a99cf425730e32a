package testkit

import (
	"reflect"
	"time"
)

// Filled is a value of t with every field set, at every depth: every
// pointer to a filled value, every slice and map holding one element,
// scalars not zero, times a fixed instant. Tests use it to see every
// field written (encoding/json) or copied (a deep clone).
func Filled(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	switch {
	case t == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)))
		return v
	case t.Kind() == reflect.Interface:
		v.Set(reflect.ValueOf("x"))
		return v
	}
	switch t.Kind() {
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
	case reflect.Pointer:
		v.Set(Filled(t.Elem()).Addr())
	case reflect.Slice:
		v.Set(reflect.Append(v, Filled(t.Elem())))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(Filled(t.Key()), Filled(t.Elem()))
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				f.Set(Filled(t.Field(i).Type))
			}
		}
	}
	return v
}
