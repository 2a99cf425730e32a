package gateway

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseDeploy holds parseDeploy to its contract on any input: it never
// panics, an error is always an *apiError with a 4xx status, and an
// accepted request has a valid name and an offering.
func FuzzParseDeploy(f *testing.F) {
	for _, s := range []string{
		`{"name":"web-1","offering":"small"}`,
		`{"name":"web-1","offering":"small","ha":true,"affinity_group":"g"}`,
		`{"name":"","offering":"small"}`,
		`{"name":"a","offering":"small","x":1}`,
		`{"name":"a","offering":"small"}{}`,
		`{"name":1}`, `[]`, `null`, `"x"`, `{`, ``,
		`{"name":"a","offering":"small","ha":null}`,
		`{"name":"\u0041","offering":"s"}`,
		`{"name":"a","offering":"s","template":"tiny-linux","root_disk_gb":4,"data_disk_gb":2,"networks":["guest"]}`,
		`{"name":"a","offering":"s","root_disk_gb":4}`,
		`{"name":"a","offering":"s","networks":["g","g"]}`,
		`{"name":"a","offering":"s","data_disk_gb":-3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseDeploy(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 || ae.Code == "" || ae.Message == "" {
				t.Fatalf("error %v (%T) is not a 4xx apiError", err, err)
			}
			return
		}
		if !validName(req.Name) || req.Offering == "" || len(req.Offering) > 255 {
			t.Fatalf("accepted %+v", req)
		}
		if req.AffinityGroup != "" && !validName(req.AffinityGroup) {
			t.Fatalf("accepted affinity group %q", req.AffinityGroup)
		}
		if req.RootDiskGB < 0 || req.DataDiskGB < 0 || req.RootDiskGB > 0 && req.Template == "" || len(req.Networks) > maxNics {
			t.Fatalf("accepted disks or networks %+v", req)
		}
		// What was accepted is a JSON object, so re-encoding and parsing
		// again yields the same request.
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		req2, err := parseDeploy(again)
		if err != nil || req2.Name != req.Name || req2.Offering != req.Offering || req2.AffinityGroup != req.AffinityGroup {
			t.Fatalf("round trip of %+v: %+v, %v", req, req2, err)
		}
	})
}
