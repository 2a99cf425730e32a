package journal

import (
	"encoding/json"
	"testing"
)

// hostOfSlow is what hostOf must always agree with.
func hostOfSlow(obj string) string {
	var o struct {
		HostID string `json:"host_id"`
	}
	if json.Unmarshal([]byte(obj), &o) != nil {
		return ""
	}
	return o.HostID
}

var hostOfSeeds = []string{
	`{"command_id":"c-1","epoch":3,"host_id":"h-0042"}`,
	`{"host_id":"h1"}`, `{}`, `{"zone_id":"z","offering":"small"}`, ` { "host_id" : "a b" , "x" : [1,{"host_id":"in"}] } `,
	`{"HOST_ID":"upper"}`, `{"Host_Id":"mixed","host_id":"last"}`, `{"host_id":"first","HOST_ID":"last"}`,
	`{"host_id":null}`, `{"host_id":"h","host_id":null}`, `{"host_id":5}`, `{"host_id":"h","x":true}`,
	`{"host_id":{"a":"b"}}`, `{"host_id":["h"]}`, `{"a":{"host_id":"nested"}}`, `{"a":"{\"host_id\":\"q\"}"}`,
	`{"host_id":"h"`, `["host_id"]`, `"host_id"`, `null`, `{"host_id":"h"} x`, `{"host_\u0069d":"esc"}`,
	`{"host_id":"é"}`, `{"x":"host_id","y":"z"}`, `{"a":[],"b":{},"host_id":"after empties"}`, `{"a":-1.5e3,"host_id":"n"}`,
	`{"_":1}`, `{"host_id":""}`, `{"host_id":"x","host_id":1}`,
}

func TestHostOfIsUnmarshal(t *testing.T) {
	for _, obj := range hostOfSeeds {
		if got, want := hostOf(obj), hostOfSlow(obj); got != want {
			t.Errorf("hostOf(%s) = %q, json.Unmarshal says %q", obj, got, want)
		}
	}
}

func FuzzHostOf(f *testing.F) {
	for _, s := range hostOfSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, obj string) {
		if got, want := hostOf(obj), hostOfSlow(obj); got != want {
			t.Errorf("hostOf(%q) = %q, json.Unmarshal says %q", obj, got, want)
		}
	})
}
