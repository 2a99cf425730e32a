package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRedriveSkips(t *testing.T) {
	redrive := func(forWhom string) *kgo.Record {
		return &kgo.Record{Headers: []kgo.RecordHeader{{Key: DLQRedrivenFrom, Value: []byte("0@17")}, {Key: DLQRedriveFor, Value: []byte(forWhom)}}}
	}
	for _, c := range []struct {
		name  string
		kr    *kgo.Record
		group string
		skip  bool
	}{
		{"an original", &kgo.Record{}, "g", false},
		{"a redrive for this group", redrive("a,g"), "g", false},
		{"a redrive for others", redrive("a,b"), "g", true},
		{"a group whose name another's contains", redrive("gg"), "g", true},
		{"a consumer without a group", redrive("a"), "", true},
		{"a redrive from before redrive-for", &kgo.Record{Headers: []kgo.RecordHeader{{Key: DLQRedrivenFrom, Value: []byte("0@17")}}}, "g", false},
		{"redrive-for without a redrive", &kgo.Record{Headers: []kgo.RecordHeader{{Key: DLQRedriveFor, Value: []byte("a")}}}, "g", false},
	} {
		if got := RedriveSkips(c.kr, c.group); got != c.skip {
			t.Errorf("%s: RedriveSkips = %v, want %v", c.name, got, c.skip)
		}
	}
}
