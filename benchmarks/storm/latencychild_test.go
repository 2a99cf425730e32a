package storm

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// A latency child hands its sample to the harness as JSON: every field,
// the stages' fixed array and the maps keyed by rate included, must come
// back as it was.
func TestLatencySampleSurvivesTheChildBoundary(t *testing.T) {
	var st stageTimes
	for i := range st {
		st[i] = []time.Duration{time.Duration(i+1) * time.Millisecond, 1500 * time.Microsecond}
	}
	in := LatencySample{
		Actions: map[int][]time.Duration{100: {3 * time.Millisecond}, 500: {4 * time.Millisecond, 25 * time.Millisecond}},
		Stages:  map[int]stageTimes{500: st},
		Failed:  map[int]int{1000: 61},
		Errs:    map[int]string{1000: "61 of 5000 actions failed"},
		Hop:     []time.Duration{1190 * time.Microsecond},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out LatencySample
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("after JSON %+v, want %+v", out, in)
	}
}
