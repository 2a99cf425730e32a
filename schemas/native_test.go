package schemas

import (
	"fmt"
	"reflect"
	"testing"
)

// toNative turns a Go value into goavro's native form.
func toNative(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Struct:
		fs := cachedFields(v.Type())
		m := make(map[string]any, len(fs))
		for _, f := range fs {
			fv, err := v.FieldByIndexErr(f.index)
			if err != nil { // in a nil inline part
				fv = reflect.Zero(f.typ)
			}
			m[f.name] = toNative(fv)
		}
		return m
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.IsNil() {
				return []byte{}
			}
			return v.Bytes()
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = toNative(v.Index(i))
		}
		return out
	case reflect.Map:
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			out[it.Key().String()] = toNative(it.Value())
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return toNative(reflect.Zero(v.Type().Elem()))
		}
		return toNative(v.Elem())
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int32:
		return int32(v.Int())
	case reflect.Int64:
		return v.Int()
	case reflect.Float64:
		return v.Float()
	}
	panic(fmt.Sprintf("schemas: unsupported Go type %s", v.Type()))
}

// fill gives every field of v a distinct non-zero value (two items in slices
// and maps), so a codec that drops or swaps a field is seen.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), seed)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d-é", *seed))
	case reflect.Bool:
		v.SetBool(*seed%2 == 0)
	case reflect.Int32, reflect.Int64:
		v.SetInt(int64(*seed) * -7919)
	case reflect.Float64:
		v.SetFloat(float64(*seed) + 0.25)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{byte(*seed), 0, 255})
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), seed)
		fill(s.Index(1), seed)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := 0; i < 2; i++ {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, seed)
			m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", *seed+i)), e)
		}
		v.Set(m)
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		fill(e.Elem(), seed)
		v.Set(e)
	}
}

// TestDirectCodecAgreesWithGoavro holds the direct binary path against
// goavro for every record type, both ways.
func TestDirectCodecAgreesWithGoavro(t *testing.T) {
	for _, name := range Names() {
		e := byName[name]
		seed := 0
		want := reflect.New(e.typ)
		fill(want.Elem(), &seed)
		idSafe(want.Elem())

		fast, err := Marshal(want.Interface())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		native, rest, err := e.codec.NativeFromSingle(fast)
		if err != nil || len(rest) != 0 {
			t.Fatalf("%s: goavro cannot read the direct encoding: %v", name, err)
		}
		got := reflect.New(e.typ)
		if err := fromNative(native, got.Elem(), ""); err != nil || !reflect.DeepEqual(got.Interface(), want.Interface()) {
			t.Fatalf("%s: goavro read back %+v, want %+v (%v)", name, got.Interface(), want.Interface(), err)
		}

		slow, err := e.codec.SingleFromNative(nil, toNative(want.Elem()))
		if err != nil {
			t.Fatalf("%s: goavro encode: %v", name, err)
		}
		back, err := Unmarshal(slow)
		if err != nil || !reflect.DeepEqual(back, want.Interface()) {
			t.Fatalf("%s: direct decode of goavro bytes: %v\n got %+v\nwant %+v", name, err, back, want.Interface())
		}
	}
}

func BenchmarkMarshalVmRecord(b *testing.B) {
	seed := 0
	v := &VmRecord{}
	fill(reflect.ValueOf(v).Elem(), &seed)
	idSafe(reflect.ValueOf(v).Elem())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalPowerReport(b *testing.B) {
	buf, _ := Marshal(&PowerReport{VmID: "vm-00000001", HostID: "host-p1-c1-h1", PowerState: PowerOn, ReportSeq: 1 << 40, ReportedAt: 1 << 41})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(buf); err != nil {
			b.Fatal(err)
		}
	}
}
