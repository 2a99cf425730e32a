package journal

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/benchmarks/fleet"
	"github.com/vmplane/vmplane/schemas"
)

// TestPayloadIsEncodingJSON renders every schema type, filled in several
// ways (plain values, zero values, characters encoding/json escapes,
// invalid UTF-8, a string larger than a chunk), and wants encoding/json's
// text byte for byte, rendered alone and into one payloads, whose earlier
// payloads must still read the same once all are rendered.
func TestPayloadIsEncodingJSON(t *testing.T) {
	strs := []string{"h-0001", "", `quote " back \ slash`, "a<b", "x>y", "p & q", "tab\tnew\nline\x01", "\b\f\r\x1f\x00 end", `{"host_id":"h-1"}`, "é ü 日本", "bad \xff utf8", "line\u2028sep",
		strings.Repeat("big ", payloadChunk/4)}
	var ps payloads
	var inChunks, wants []string
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
			inChunk, err := ps.render(v)
			if err != nil {
				t.Fatal(err)
			}
			inChunks, wants = append(inChunks, inChunk), append(wants, string(want))
		}
	}
	// Enough small payloads to fill several chunks of their own.
	var small payloads
	for i := range 4 * payloadChunk / 100 {
		v := &schemas.JobStepped{JobRef: schemas.JobRef{JobID: "job-" + strconv.Itoa(i)}, Seq: int32(i), Text: strs[i%len(strs[:12])]}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inChunk, err := small.render(v)
		if err != nil {
			t.Fatal(err)
		}
		inChunks, wants = append(inChunks, inChunk), append(wants, string(want))
	}
	for i := range wants {
		if inChunks[i] != wants[i] {
			t.Errorf("payload %d rendered into chunks:\n got %s\nwant %s", i, inChunks[i], wants[i])
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

// BenchmarkRenderPayload renders the payloads of 2,000 jobs of a fleet
// history (about 12,000 events) into chunks, as the projector does.
func BenchmarkRenderPayload(b *testing.B) {
	recs := (fleet.History{Start: 1_760_000_000_000}).Records(0, 2_000)
	var ps payloads
	for b.Loop() {
		for _, r := range recs {
			if _, err := ps.render(r.Value); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "payloads/s")
}
