package schemas

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"
)

// inline and outOfLine are one record, with its parts held in the struct
// and behind pointers.
type inline struct {
	ID   string   `avro:"id" doc:"Id."`
	Job  JobState `avro:"job" doc:"Job."`
	Off  Offering `avro:"off" doc:"Offering."`
	Tail int64    `avro:"tail" doc:"A field after the pointers."`
}

type outOfLine struct {
	ID   string    `avro:"id" doc:"Id."`
	Job  *JobState `avro:"job" doc:"Job."`
	Off  *Offering `avro:"off" doc:"Offering."`
	Tail int64     `avro:"tail" doc:"A field after the pointers."`
}

// TestPointerFieldIsItsTarget: a pointer field has its target's schema and
// bytes, nil writes the zero value, and a zero value reads back as nil.
func TestPointerFieldIsItsTarget(t *testing.T) {
	in, out := reflect.TypeOf(inline{}), reflect.TypeOf(outOfLine{})
	if a, b := schemaOf(in, "R."), strings.Replace(schemaOf(out, "R."), `"outOfLine"`, `"inline"`, 1); a != b {
		t.Fatalf("schemas differ:\n%s\n%s", a, b)
	}
	job := JobState{JobID: "j1", Seq: 3, Wait: JobWait{Kind: "Answer", Deadline: 9}, Params: map[string]string{"force": "true"}}
	off := Offering{ID: "o1", CPU: 2, HostTags: []string{"ssd"}}
	for _, c := range []struct {
		name string
		v    inline
		p    outOfLine
	}{
		{"nil", inline{ID: "a", Tail: 7}, outOfLine{ID: "a", Tail: 7}},
		{"set", inline{ID: "a", Job: job, Off: off, Tail: 7}, outOfLine{ID: "a", Job: &job, Off: &off, Tail: 7}},
		{"half", inline{ID: "a", Job: job, Tail: -1}, outOfLine{ID: "a", Job: &job, Tail: -1}},
	} {
		sameRecord(t, c.name, c.v, c.p)
	}
	// A non-nil pointer to a zero value writes the zero value and reads
	// back as nil, also when the zero value is not in its shortest form.
	zero := encodeBody(nil, reflect.ValueOf(outOfLine{Job: &JobState{}, Off: &Offering{}}), planOf(out))
	if !bytes.Equal(zero, encodeBody(nil, reflect.ValueOf(outOfLine{}), planOf(out))) {
		t.Fatalf("a pointer to a zero value writes %x", zero)
	}
	long := append([]byte{zero[0], 0x80, 0x00}, zero[2:]...) // job.job_id's length as a two-byte varint
	back, err := decodeBodyFast(long, planOf(out), false)
	if err != nil || !reflect.DeepEqual(back, &outOfLine{}) {
		t.Fatalf("zero value in a longer form: decoded %+v (%v)", back, err)
	}
}

// sameRecord holds the compact form p of a record to the bytes of its
// plain form v, both ways, and returns them.
func sameRecord(t *testing.T, name string, v, p any) []byte {
	t.Helper()
	want := encodeBody(nil, reflect.ValueOf(v), planOf(reflect.TypeOf(v)))
	if got := encodeBody(nil, reflect.ValueOf(p), planOf(reflect.TypeOf(p))); !bytes.Equal(got, want) {
		t.Fatalf("%s: the compact form writes %x, the plain one %x", name, got, want)
	}
	back, err := decodeBodyFast(want, planOf(reflect.TypeOf(p)), false)
	if err != nil || !reflect.DeepEqual(reflect.ValueOf(back).Elem().Interface(), p) {
		t.Fatalf("%s: decoded %+v (%v), want %+v", name, back, err, p)
	}
	return want
}

// flat and split are one record, its rare fields in line and in an inline
// part.
type flat struct {
	ID    string      `avro:"id" doc:"Id."`
	Count int64       `avro:"count" doc:"Rare, after id."`
	Tail  string      `avro:"tail" doc:"Common."`
	Hosts []string    `avro:"hosts" doc:"Rare, after tail."`
	Twin  *TwinReport `avro:"twin" doc:"Rare, after hosts."`
	Last  int32       `avro:"last" doc:"Common, after the rare ones."`
}

type split struct {
	ID   string     `avro:"id" doc:"Id."`
	Tail string     `avro:"tail" doc:"Common."`
	Last int32      `avro:"last" doc:"Common, after the rare ones."`
	Rare *splitRare `avro:",inline"`
}

type splitRare struct {
	Count int64       `avro:"count" after:"id" doc:"Rare, after id."`
	Hosts []string    `avro:"hosts" after:"tail" doc:"Rare, after tail."`
	Twin  *TwinReport `avro:"twin" after:"hosts" doc:"Rare, after hosts."`
}

// TestInlinePartIsInline: the fields of an inline part are the record's
// own, in the order their tags say, with the schema and bytes of the record
// that holds them in line; a nil part writes them zero, and a part that
// reads back all zero is nil, by the direct decoder and by goavro's path.
func TestInlinePartIsInline(t *testing.T) {
	in, out := reflect.TypeOf(flat{}), reflect.TypeOf(split{})
	if a, b := schemaOf(in, "R."), strings.Replace(schemaOf(out, "R."), `"split"`, `"flat"`, 1); a != b {
		t.Fatalf("schemas differ:\n%s\n%s", a, b)
	}
	codec, err := goavro.NewCodec(schemaOf(out, "R."))
	if err != nil {
		t.Fatal(err)
	}
	twin := TwinReport{HostID: "h2", PowerState: PowerOn, OwnSeq: 3}
	for _, c := range []struct {
		name string
		v    flat
		p    split
	}{
		{"nil", flat{ID: "a", Tail: "t", Last: 9}, split{ID: "a", Tail: "t", Last: 9}},
		{"first", flat{ID: "a", Count: 2}, split{ID: "a", Rare: &splitRare{Count: 2}}},
		{"middle", flat{Tail: "t", Hosts: []string{"h1"}, Last: -1}, split{Tail: "t", Last: -1, Rare: &splitRare{Hosts: []string{"h1"}}}},
		{"pointer", flat{ID: "a", Twin: &twin}, split{ID: "a", Rare: &splitRare{Twin: &twin}}},
		{"all", flat{"a", 2, "t", []string{"h1", "h2"}, &twin, 9}, split{"a", "t", 9, &splitRare{2, []string{"h1", "h2"}, &twin}}},
	} {
		want := sameRecord(t, c.name, c.v, c.p)
		native, _, err := codec.NativeFromBinary(want)
		if err != nil {
			t.Fatal(err)
		}
		slow := &split{}
		if err := fromNative(native, reflect.ValueOf(slow).Elem(), ""); err != nil || !reflect.DeepEqual(slow, &c.p) {
			t.Fatalf("%s: goavro's path read %+v (%v), want %+v", c.name, slow, err, c.p)
		}
		if err := checkValue(reflect.ValueOf(c.p), "", false); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	// A part whose first field written is a zero in a longer form, or
	// which is set to all zero, reads back nil.
	zero := encodeBody(nil, reflect.ValueOf(split{Rare: &splitRare{}}), planOf(out))
	if !bytes.Equal(zero, encodeBody(nil, reflect.ValueOf(split{}), planOf(out))) {
		t.Fatalf("a part of zeros writes %x", zero)
	}
	long := append([]byte{zero[0], 0x80, 0x00}, zero[2:]...) // count as a two-byte varint
	back, err := decodeBodyFast(long, planOf(out), false)
	if err != nil || !reflect.DeepEqual(back, &split{}) {
		t.Fatalf("zero in a longer form: decoded %+v (%v)", back, err)
	}
	// hosts and twin follow one another in the part: one run of zeros,
	// which the decoder skips at once. With twin's own_seq a zero in a
	// longer form the run is read field by field, and the part is nil.
	if len(zero) != 8 {
		t.Fatalf("the zero record is %x, want 8 bytes", zero)
	}
	long = append(append(append([]byte{}, zero[:6]...), 0x80, 0x00), zero[7:]...)
	if back, err := decodeBodyFast(long, planOf(out), false); err != nil || !reflect.DeepEqual(back, &split{}) {
		t.Fatalf("a run with a zero in a longer form: decoded %+v (%v)", back, err)
	}
}
