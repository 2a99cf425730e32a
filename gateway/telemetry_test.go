package gateway

import "testing"

// TestMethodLabel: a made-up method is one label, "other", not a series of
// its own.
func TestMethodLabel(t *testing.T) {
	for m, want := range map[string]string{"GET": "GET", "DELETE": "DELETE", "OPTIONS": "OPTIONS",
		"get": "other", "BREW": "other", "GET\x00": "other", "": "other"} {
		if got := methodLabel(m); got != want {
			t.Errorf("methodLabel(%q) = %q, want %q", m, got, want)
		}
	}
}
