package schemas

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vmplane/vmplane/schemas/confluent"
)

// TestAppendEncodeIsEncodeAppended holds AppendEncode to Encode, with and
// without a registry: appending to a buffer already holding a record
// leaves that record intact and adds exactly Encode's bytes.
func TestAppendEncodeIsEncodeAppended(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	cl, err := confluent.New(reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Codec{"single-object": NewCodec(nil), "confluent": NewCodec(cl)} {
		first, err := c.Encode(t.Context(), sample())
		if err != nil {
			t.Fatal(err)
		}
		second := &VmRecord{VmID: "vm-2", ReportSeq: map[string]int64{"h2": 2, "h1": 1, "h3": 3}, Job: &JobState{Params: map[string]string{"b": "2", "a": "1"}}}
		want, err := c.Encode(t.Context(), second)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := c.AppendEncode(t.Context(), append([]byte(nil), first...), second)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:len(first)], first) || !bytes.Equal(buf[len(first):], want) {
			t.Fatalf("%s: AppendEncode wrote %x after the first record, Encode %x", name, buf[len(first):], want)
		}
		got, err := c.Decode(t.Context(), buf[len(first):])
		if err != nil || !reflect.DeepEqual(got, second) {
			t.Fatalf("%s: decode: %v %+v", name, err, got)
		}
	}
}

// TestMapEncodingIsDeterministic: the same state encodes to the same bytes
// whatever order its maps were filled in, for one key and for several.
func TestMapEncodingIsDeterministic(t *testing.T) {
	keys := []string{"host-9", "host-10", "host-1", "a", "zz"}
	for n := 1; n <= len(keys); n++ {
		fwd, rev := map[string]int64{}, map[string]int64{}
		for i := range n {
			fwd[keys[i]] = int64(i)
		}
		for i := n - 1; i >= 0; i-- {
			rev[keys[i]] = int64(i)
		}
		a, _ := Marshal(&VmRecord{ReportSeq: fwd})
		b, _ := Marshal(&VmRecord{ReportSeq: rev})
		if !bytes.Equal(a, b) {
			t.Fatalf("%d keys: %x vs %x", n, a, b)
		}
		back, err := Unmarshal(a)
		if err != nil || !reflect.DeepEqual(back.(*VmRecord).ReportSeq, fwd) {
			t.Fatalf("%d keys: round trip %v %+v", n, err, back)
		}
	}
}
