package gateway

import (
	"errors"
	"net/netip"
	"path"
	"testing"
)

// FuzzParseStorage holds the decoders of templates, pools and networks to
// their contract on any input: they never panic, an error is a 4xx
// apiError, and what they accept is what the records may carry.
func FuzzParseStorage(f *testing.F) {
	for _, s := range []string{
		`{"name":"alpine","format":"qcow2","size_gb":2,"os_type":"Alpine"}`,
		`{"id":"img-1","name":"a","format":"raw","size_gb":1,"os_type":"x"}`,
		`{"name":"fast","scope":"Zone","path":"/srv/pools/fast","capacity_gb":100,"tags":["ssd"]}`,
		`{"name":"local","scope":"Host","host_id":"h1","path":"/var/lib/p","capacity_gb":1}`,
		`{"name":"c","scope":"Cluster","cluster_id":"c1","path":"/p","capacity_gb":1}`,
		`{"name":"guest","cidr":"10.1.0.0/16","gateway":"10.1.0.1","default":true}`,
		`{"name":"g","cidr":"10.1.0.0/30","gateway":"10.1.0.2"}`,
		`{"name":"g","cidr":"10.1.0.1/24","gateway":"10.1.0.1"}`,
		`{"path":"/a/../b"}`, `{"size_gb":-1}`, `{"capacity_gb":9223372036854775807}`, `[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if tr, err := parseTemplate(body); fuzzAccepted(t, err) {
			if !validName(tr.Name) || !validName(tr.ID) || tr.SizeGB <= 0 || tr.SizeGB > maxTemplateGB || tr.OsType == "" {
				t.Fatalf("accepted template %+v", tr)
			}
		}
		if p, err := parsePool(body, "zone-1"); fuzzAccepted(t, err) {
			if !validName(p.Name) || !path.IsAbs(p.Path) || path.Clean(p.Path) != p.Path || p.CapacityGB <= 0 ||
				p.CapacityGB > maxPoolGB || checkScope(p.Scope, p.ClusterID, p.HostID) != nil {
				t.Fatalf("accepted pool %+v", p)
			}
		}
		if n, prefix, err := parseNetwork(body, "zone-1"); fuzzAccepted(t, err) {
			gw, gerr := netip.ParseAddr(n.Gateway)
			if !validName(n.Name) || gerr != nil || !prefix.Contains(gw) || prefix.Bits() > maxPrefix || prefix.Masked() != prefix {
				t.Fatalf("accepted network %+v", n)
			}
		}
	})
}

// fuzzAccepted says whether a parser accepted its input, failing the test
// when its error is no 4xx apiError.
func fuzzAccepted(t *testing.T, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 || ae.Code == "" || ae.Message == "" {
		t.Fatalf("error %v (%T) is not a 4xx apiError", err, err)
	}
	return false
}
