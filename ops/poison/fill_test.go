package poison

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// source reads the fuzzer's input as a stream of choices; past its end
// the choices come from a generator seeded by the input, so that a short
// input still describes a whole record.
type source struct {
	b   []byte
	i   int
	rng *rand.Rand
}

func (s *source) byte() byte {
	if s.i < len(s.b) {
		s.i++
		return s.b[s.i-1]
	}
	if s.rng == nil {
		h := fnv.New64a()
		h.Write(s.b)
		s.rng = rand.New(rand.NewPCG(h.Sum64(), uint64(len(s.b))))
	}
	return byte(s.rng.Uint32())
}

func (s *source) bytes(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = s.byte()
	}
	return out
}

func pick(s *source, from []string) string { return from[int(s.byte())%len(from)] }

// keys and ids are few, so that records meet the same VMs, hosts and zones.
var keys = []string{"vm-1", "vm-2", "host-1", "host-2", "zone-1", "catalog", "acct-a", ""}

// texts are valid text of every kind, and strings that are not.
var texts = []string{"", "web", "café ✓", "line\nbreak\ttab", strings.Repeat("long ", 300), "nul\x00", "bad\xff", "bell\a"}

var ints = []int64{0, 1, -1, 2, 1024, 1_700_000_000_000, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 53}

// allTypes is every record name a topic carries.
var allTypes = func() []string {
	var out []string
	for _, t := range schemas.Topics {
		out = append(out, t.Types...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}()

func reflectValue(v any) reflect.Value { return reflect.ValueOf(v).Elem() }

// fill gives every field of v a value chosen by s: ids from keys, text
// from texts, numbers from ints (extremes included), lists and maps of up
// to two items. Id fields get a broken id now and then, as text does.
func fill(v reflect.Value, s *source, field string) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("avro"), ",")
			if t.Field(i).Anonymous {
				name = field
			}
			fill(v.Field(i), s, name)
		}
	case reflect.String:
		if schemas.IsIDField(field) && s.byte()%16 != 0 {
			v.SetString(pick(s, keys))
			return
		}
		v.SetString(pick(s, texts))
	case reflect.Bool:
		v.SetBool(s.byte()%2 == 1)
	case reflect.Int32:
		v.SetInt(int64(int32(ints[int(s.byte())%len(ints)])))
	case reflect.Int64:
		v.SetInt(ints[int(s.byte())%len(ints)])
	case reflect.Float64:
		v.SetFloat([]float64{0, 1, 1.5, -1, math.Inf(1), math.NaN(), math.MaxFloat64}[int(s.byte())%7])
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(s.bytes(int(s.byte() % 8)))
			return
		}
		n := int(s.byte() % 3)
		out := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(out.Index(i), s, field)
		}
		v.Set(out)
	case reflect.Map:
		n := int(s.byte() % 3)
		m := reflect.MakeMap(v.Type())
		for range n {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, s, "")
			m.SetMapIndex(reflect.ValueOf(pick(s, texts)).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Pointer:
		if s.byte()%2 == 0 {
			return
		}
		e := reflect.New(v.Type().Elem())
		fill(e.Elem(), s, field)
		v.Set(e)
	}
}
