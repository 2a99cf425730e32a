package gateway

import (
	"errors"
	"net/http"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// FuzzBlazarFilter: any text given as a Blazar filter is either mapped to
// host properties, each named, or refused with a 400 naming the field;
// never a panic, never another error.
func FuzzBlazarFilter(f *testing.F) {
	for _, s := range []string{"", "[]", `["=", "$a", "1"]`, `["and", ["=", "$a", 1], ["==", "$b", "x"]]`,
		`[">=", "$memory_mb", "4096"]`, `["and", ["and", ["=", "$a", "1"]], ["=", "$a", "2"]]`, `["=", "$", 1]`,
		`[["and"]]`, `"text"`, `["=", "$a", true]`, `[] []`, `["=", "$a\u0000", "1"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		props, err := blazarFilter("reservations[0].resource_properties", text)
		if err != nil {
			var e *apiError
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Details["field"] != "reservations[0].resource_properties" {
				t.Fatalf("%q: %v", text, err)
			}
			return
		}
		for k, v := range props {
			if k == "" || schemas.CheckText(k) != nil || schemas.CheckText(v) != nil {
				t.Fatalf("%q maps to a property a record may not carry: %q", text, props)
			}
		}
	})
}
