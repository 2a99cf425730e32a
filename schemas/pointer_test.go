package schemas

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
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
		want := encodeBody(nil, reflect.ValueOf(c.v), planOf(in))
		if got := encodeBody(nil, reflect.ValueOf(c.p), planOf(out)); !bytes.Equal(got, want) {
			t.Fatalf("%s: pointer form writes %x, value form %x", c.name, got, want)
		}
		back, err := decodeBodyFast(want, planOf(out), false)
		if err != nil || !reflect.DeepEqual(back, &c.p) {
			t.Fatalf("%s: decoded %+v (%v), want %+v", c.name, back, err, c.p)
		}
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
