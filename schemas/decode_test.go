package schemas

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/linkedin/goavro/v2"
)

// randomFill gives v a random value: empty, short, non-ASCII and long
// strings (lengths of more than one varint byte), extreme numbers, nil and
// empty bytes, slices and maps of 0–3 items, nil pointers and pointers to
// zero and to random values.
func randomFill(v reflect.Value, rng *rand.Rand) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			randomFill(v.Field(i), rng)
		}
	case reflect.String:
		switch rng.IntN(5) {
		case 0:
			v.SetString("")
		case 1:
			v.SetString("é✓-" + strings.Repeat("x", rng.IntN(4)))
		case 2:
			v.SetString(strings.Repeat("long-", 20+rng.IntN(60)))
		default:
			v.SetString("s" + strings.Repeat("a", rng.IntN(20)))
		}
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Int32:
		v.SetInt([]int64{0, -1, 1, 63, -64, 64, math.MinInt32, math.MaxInt32, int64(rng.Int32()) - math.MaxInt32/2}[rng.IntN(9)])
	case reflect.Int64:
		v.SetInt([]int64{0, -1, 1, 1 << 40, math.MinInt64, math.MaxInt64, rng.Int64() - math.MaxInt64/2}[rng.IntN(7)])
	case reflect.Float64:
		v.SetFloat([]float64{0, -1.5, math.MaxFloat64, math.SmallestNonzeroFloat64, rng.NormFloat64()}[rng.IntN(5)])
	case reflect.Slice:
		n := rng.IntN(4)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if n > 0 {
				b := make([]byte, rng.IntN(300)+1)
				for i := range b {
					b[i] = byte(rng.IntN(256))
				}
				v.SetBytes(b)
			}
			return
		}
		if n == 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			randomFill(s.Index(i), rng)
		}
		v.Set(s)
	case reflect.Map:
		n := rng.IntN(4)
		if n == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range n {
			e := reflect.New(v.Type().Elem()).Elem()
			randomFill(e, rng)
			m.SetMapIndex(reflect.ValueOf("k"+strings.Repeat("é", rng.IntN(3))+string(rune('a'+rng.IntN(26)))), e)
		}
		v.Set(m)
	case reflect.Pointer:
		switch rng.IntN(3) {
		case 0:
		case 1:
			v.Set(reflect.New(v.Type().Elem())) // written as the zero value
		default:
			e := reflect.New(v.Type().Elem())
			randomFill(e.Elem(), rng)
			v.Set(e)
		}
	}
}

// normalize makes v what a decoder returns for it: pointers to zero
// values nil.
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			normalize(v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := 0; i < v.Len(); i++ {
				normalize(v.Index(i))
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			normalize(e)
			v.SetMapIndex(it.Key(), e)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			normalize(v.Elem())
			if v.Elem().IsZero() {
				v.SetZero()
			}
		}
	}
}

// TestDecoderAgreesWithGoavro holds the direct codec against goavro for
// every record type with random values: goavro reads the direct encoding,
// the decoder reads goavro's bytes and the encoder's into the value goavro
// reads, and fails cleanly, never panicking, on every truncation.
func TestDecoderAgreesWithGoavro(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	n := 30
	if testing.Short() {
		n = 5
	}
	for _, name := range Names() {
		e := byName[name]
		for i := range n {
			want := reflect.New(e.typ)
			randomFill(want.Elem(), rng)
			idSafe(want.Elem())
			fast := encodeBody(nil, want.Elem(), e.plan)
			slow, err := e.codec.BinaryFromNative(nil, toNative(want.Elem()))
			if err != nil {
				t.Fatalf("%s #%d: goavro encode: %v", name, i, err)
			}
			normalize(want.Elem())

			native, rest, err := e.codec.NativeFromBinary(fast)
			if err != nil || len(rest) != 0 {
				t.Fatalf("%s #%d: goavro cannot read the direct encoding: %v", name, i, err)
			}
			viaGoavro := reflect.New(e.typ)
			if err := fromNative(native, viaGoavro.Elem(), ""); err != nil || !reflect.DeepEqual(viaGoavro.Interface(), want.Interface()) {
				t.Fatalf("%s #%d: goavro read %+v, want %+v (%v)", name, i, viaGoavro.Interface(), want.Interface(), err)
			}
			for form, body := range map[string][]byte{"direct": fast, "goavro": slow} {
				got, err := decodeBodyFast(body, e.plan, false)
				if err != nil || !reflect.DeepEqual(got, want.Interface()) {
					t.Fatalf("%s #%d: decoding the %s bytes: %v\n got %+v\nwant %+v", name, i, form, err, got, want.Interface())
				}
			}
			if i >= 10 {
				continue // every truncation of the first 10 values is enough
			}
			for cut := range len(fast) {
				if _, err := decodeBodyFast(fast[:cut], e.plan, false); err == nil {
					t.Fatalf("%s #%d: %d of %d bytes decoded", name, i, cut, len(fast))
				}
			}
		}
	}
}

// blocks has every kind of array and map whose items the decoder writes in
// place, to read them from several blocks.
type blocks struct {
	Tags  []string             `avro:"tags" doc:"Strings."`
	Jobs  []RecentJob          `avro:"jobs" doc:"Records."`
	ByKey map[string]RecentJob `avro:"by_key" doc:"Records by key."`
	Seqs  map[string]int64     `avro:"seqs" doc:"Longs by key."`
	Name  string               `avro:"name" doc:"A string after them."`
}

// TestDecoderReadsBlocks: arrays and maps written in several blocks, one
// with a negative count and a byte size (as other writers may), decode as
// goavro decodes them, their strings intact; the encoder writes them back
// in one block each.
func TestDecoderReadsBlocks(t *testing.T) {
	str := func(s string) []byte { return appendString(nil, s) }
	job := func(id, state string) []byte { return append(str(id), str(state)...) }
	var b []byte
	b = append(b, 4) // tags: 2 items
	b = append(append(b, str("t1")...), str("t2")...)
	b = append(b, 1, byte(len(str("t3")))*2) // -1 item, then its size
	b = append(append(b, str("t3")...), 0)
	b = append(append(b, 2), job("j1", "succeeded")...) // jobs: 1 + 2 items
	b = append(append(append(b, 4), job("j2", "failed")...), job("j3", "rejected")...)
	b = append(b, 0)
	b = append(append(append(b, 2), str("k1")...), job("j4", "cancelled")...) // by_key: 1 + 1
	b = append(append(append(b, 2), str("k2")...), job("j5", "failed")...)
	b = append(b, 0)
	b = append(append(append(b, 2), str("h1")...), 14)    // seqs: 1 + 1
	b = append(append(append(b, 2), str("h2")...), 16, 0) // 7, 8, end
	b = append(b, str("end")...)

	want := &blocks{
		Tags:  []string{"t1", "t2", "t3"},
		Jobs:  []RecentJob{{"j1", "succeeded"}, {"j2", "failed"}, {"j3", "rejected"}},
		ByKey: map[string]RecentJob{"k1": {"j4", "cancelled"}, "k2": {"j5", "failed"}},
		Seqs:  map[string]int64{"h1": 7, "h2": 8},
		Name:  "end",
	}
	c, err := goavro.NewCodec(schemaOf(reflect.TypeFor[blocks](), "Blocks."))
	if err != nil {
		t.Fatal(err)
	}
	native, rest, err := c.NativeFromBinary(b)
	if err != nil || len(rest) != 0 {
		t.Fatalf("goavro: %v, %d left", err, len(rest))
	}
	viaGoavro := &blocks{}
	if err := fromNative(native, reflect.ValueOf(viaGoavro).Elem(), ""); err != nil || !reflect.DeepEqual(viaGoavro, want) {
		t.Fatalf("goavro read %+v (%v), want %+v", viaGoavro, err, want)
	}
	p := planOf(reflect.TypeFor[blocks]())
	got, err := decodeBodyFast(b, p, false)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v (%v), want %+v", got, err, want)
	}
	// Written back in one block each, the same value.
	one := encodeBody(nil, reflect.ValueOf(want).Elem(), p)
	if got, err := decodeBodyFast(one, p, false); err != nil || !reflect.DeepEqual(got, want) || len(one) >= len(b) {
		t.Fatalf("re-encoded as %x: decoded %+v (%v)", one, got, err)
	}
}

// TestDecodeConcurrently decodes the same bytes of every record type from
// several goroutines (the plans are shared), for the race detector.
func TestDecodeConcurrently(t *testing.T) {
	var bufs [][]byte
	for _, m := range decodeMix() {
		b, err := Marshal(m.v)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				for i, b := range bufs {
					got, err := Unmarshal(b)
					if err != nil || !reflect.DeepEqual(got, decodeMix()[i].v) {
						t.Errorf("%s: %v", decodeMix()[i].name, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestDecoderRefusesTheLeastCount: a block count of math.MinInt64, whose
// negation stays negative, fails the record where it stands.
func TestDecoderRefusesTheLeastCount(t *testing.T) {
	b := binary.AppendUvarint(nil, math.MaxUint64) // zigzag of MinInt64
	b = append(b, 0)                               // the block's byte size
	_, err := decodeBodyFast(b, planOf(reflect.TypeFor[blocks]()), false)
	if err == nil || !strings.Contains(err.Error(), "block of") {
		t.Fatalf("a count of MinInt64: %v", err)
	}
}
