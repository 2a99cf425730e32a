package gateway_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// FuzzPutSetting sends PUT /v1/settings/{name} any name and body as an
// admin. It fails on a 5xx, and on a published record that a processor
// would refuse (settings.Check) or its consumers could not decode: what
// the gateway accepts, every processor applies.
func FuzzPutSetting(f *testing.F) {
	for _, s := range []struct{ name, body string }{
		{"ping.timeout", `{"value":"20s"}`},
		{"ping.timeout", `{"value":"2h"}`},
		{"vm.deployment.planner", `{"value":"UserDispersingPlanner","zone":"zone-1"}`},
		{"cpu.overprovisioning.factor", `{"value":"1e1","cluster":"c1"}`},
		{"cpu.overprovisioning.factor", `{"value":"NaN","cluster":"c1"}`},
		{"ha.max.retries", `{"value":"0x10"}`},
		{"ha.max.retries", `{"value":"5","zone":"z\u0000"}`},
		{"lease.monitor.type", `{"value":"po\u0000ll"}`},
		{"alert.wait", `{"value":"1m","zone":"","cluster":""}`},
		{"x", `{"value":1}`}, {"ping.timeout", `[]`}, {"ping.timeout", ``},
	} {
		f.Add(s.name, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		e := newEnv(t, gateway.Config{RatePerSecond: -1})
		rec := e.do(http.MethodPut, "/v1/settings/"+url.PathEscape(name), e.admin, string(body))
		if rec.Code >= 500 {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		for _, r := range e.pub.Records() {
			c, ok := r.Value.(*schemas.SettingChanged)
			if !ok || r.Topic != schemas.TopicSettings || r.Key != settings.Key(c.Scope, c.ScopeID, c.Name) {
				t.Fatalf("published %+v", r)
			}
			if err := settings.Check(c.Name, c.Scope, c.ScopeID, c.Value); err != nil || c.Value == "" {
				t.Fatalf("published %+v that a processor refuses: %v", c, err)
			}
			b, err := schemas.NewCodec(nil).Encode(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := schemas.NewCodec(nil).Decode(t.Context(), b); err != nil {
				t.Fatalf("published %+v that does not decode: %v", c, err)
			}
		}
	})
}
