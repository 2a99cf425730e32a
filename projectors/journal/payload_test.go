package journal

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// TestPayloadIsEncodingJSON renders every schema type, filled in several
// ways (plain values, zero values, characters encoding/json escapes,
// invalid UTF-8), and wants encoding/json's text byte for byte.
func TestPayloadIsEncodingJSON(t *testing.T) {
	strs := []string{"h-0001", "", `quote " back \ slash`, "a<b", "x>y", "p & q", "tab\tnew\nline\x01", "\b\f\r\x1f\x00 end", `{"host_id":"h-1"}`, "é ü 日本", "bad \xff utf8", "line\u2028sep"}
	for _, name := range schemas.Names() {
		for k := range len(strs) + 1 {
			v, ok := schemas.New(name)
			if !ok {
				t.Fatalf("no type %s", name)
			}
			if k > 0 { // k == 0 leaves the zero value: nil slices, empty strings
				fill(reflect.ValueOf(v).Elem(), strs[k-1], int64(k))
			}
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := renderPayload(v)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s (fill %d):\n got %s\nwant %s", name, k, got, want)
			}
		}
	}
	// The events of vm.events.v1 are the bulk of a catch-up: they must not
	// fall back to encoding/json.
	for _, v := range []any{schemas.JobAccepted{}, schemas.JobStepped{}, schemas.JobSucceeded{}, schemas.JobFailed{},
		schemas.JobCancelled{}, schemas.JobRejected{}, schemas.VmStateChanged{}, schemas.PowerStateObserved{},
		schemas.AlertRaised{}, schemas.VmExpunged{}} {
		if appenderOf(reflect.TypeOf(v)) == nil {
			t.Errorf("%T is rendered by encoding/json", v)
		}
	}
}

// fill sets every settable field of v: strings to s, numbers from n,
// bools true, slices to two elements, maps to one entry, pointers to a
// filled value.
func fill(v reflect.Value, s string, n int64) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-n * 1_000_003)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n) * 7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) / 3)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), s, n+int64(i))
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key, s+"k", n)
		fill(val, s, n)
		m.SetMapIndex(key, val)
		v.Set(m)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), s, n)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), s, n+int64(i))
			}
		}
	}
}
