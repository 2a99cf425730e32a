package testkit

import (
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// ThroughAvro returns v encoded and decoded again, as a restore from a
// changelog would see it; an encoding error, or a decoded value of
// another type, fails the test.
func ThroughAvro[T any](t testing.TB, v T) T {
	t.Helper()
	b, err := schemas.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	d, err := schemas.Unmarshal(b)
	if err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	back, ok := d.(T)
	if !ok {
		t.Fatalf("decoded %T, want %T", d, v)
	}
	return back
}
