package settings_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

func TestCatalogIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range settings.Catalog {
		if seen[s.Name] {
			t.Errorf("%s listed twice", s.Name)
		}
		seen[s.Name] = true
		if err := s.Validate(s.Default); err != nil {
			t.Errorf("%s: default %q: %v", s.Name, s.Default, err)
		}
		if len(s.Scopes) == 0 || s.Scopes[0] != settings.Global {
			t.Errorf("%s: scopes %v do not start with global", s.Name, s.Scopes)
		}
		if len(s.AppliedBy) == 0 || s.Doc == "" {
			t.Errorf("%s: no processor or no doc", s.Name)
		}
		if !schemas.ValidID(settings.Key(settings.Cluster, "c-1", s.Name)) {
			t.Errorf("%s: its key is no record key", s.Name)
		}
	}
}

func TestPlannersAreSchemasPlanners(t *testing.T) {
	var names []string
	for _, p := range schemas.Planners {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, settings.Planners) {
		t.Errorf("settings.Planners = %v, schemas.Planners = %v", settings.Planners, names)
	}
	if s, _ := settings.Lookup(settings.DeploymentPlanner); s.Default != schemas.DefaultPlanner {
		t.Errorf("default planner %q, schemas says %q", s.Default, schemas.DefaultPlanner)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, scope, id, value string
		// want is a part of the error; empty for none.
		want string
	}{
		{"ping.timeout", "global", "", "20s", ""},
		{"ping.timeout", "global", "", "0s", ""},
		{"ping.timeout", "global", "", "", ""},
		{"ping.timeout", "global", "", "2h", "want duration 0s to 1h0m0s"},
		{"ping.timeout", "global", "", "-1s", "0s to 1h0m0s"},
		{"ping.timeout", "global", "", "20", "0s to 1h0m0s"},
		{"ping.timeout", "zone", "zone-1", "20s", `scope "zone": want global`},
		{"ping.timeout", "global", "zone-1", "20s", "needs a global id, and only it"},
		{"vm.deployment.planner", "zone", "zone-1", "UserDispersingPlanner", ""},
		{"vm.deployment.planner", "zone", "", "UserDispersingPlanner", "needs a zone id"},
		{"vm.deployment.planner", "cluster", "c1", "UserDispersingPlanner", "want global or zone"},
		{"vm.deployment.planner", "global", "", "UserDispersing", "one of FirstFitPlanner, UserDispersingPlanner"},
		{"cpu.overprovisioning.factor", "cluster", "c1", "2.5", ""},
		{"cpu.overprovisioning.factor", "cluster", "c1", "0.5", "want float 1 to 16"},
		{"cpu.overprovisioning.factor", "cluster", "c1", "NaN", "1 to 16"},
		{"cpu.overprovisioning.factor", "cluster", "c1", "+Inf", "1 to 16"},
		{"ha.max.retries", "global", "", "3", ""},
		{"ha.max.retries", "global", "", "0", "want int 1 to 100"},
		{"ha.max.retries", "global", "", "3.5", "1 to 100"},
		{"lease.monitor.type", "zone", "z", "poll", ""},
		{"lease.monitor.type", "zone", "z", "pull", "one of push, poll, both"},
		{"no.such.setting", "global", "", "1", `unknown setting "no.such.setting"`},
		{"ping.timeout", "planet", "", "20s", `scope "planet"`},
	} {
		err := settings.Check(tc.name, tc.scope, tc.id, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%s %s/%s %q) = %v, want nil", tc.name, tc.scope, tc.id, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%s %s/%s %q) = %v, want an error with %q", tc.name, tc.scope, tc.id, tc.value, err, tc.want)
		}
	}
}

func TestValuesResolveMostSpecificScope(t *testing.T) {
	var v settings.Values
	must := func(name, scope, id, value string) {
		t.Helper()
		if err := v.Apply(name, scope, id, value); err != nil {
			t.Fatal(err)
		}
	}
	const f = settings.CPUOverprovisioning
	if got := v.Float(f, "z1", "c1", 4); got != 4 {
		t.Errorf("nothing set: %v, want the default 4", got)
	}
	must(f, settings.Global, "", "2")
	must(f, settings.Zone, "z1", "3")
	must(f, settings.Cluster, "c1", "5")
	for _, tc := range []struct {
		zone, cluster string
		want          float64
	}{{"z1", "c1", 5}, {"z1", "c2", 3}, {"z2", "c2", 2}, {"", "", 2}} {
		if got := v.Float(f, tc.zone, tc.cluster, 4); got != tc.want {
			t.Errorf("%s/%s: %v, want %v", tc.zone, tc.cluster, got, tc.want)
		}
	}
	must(f, settings.Cluster, "c1", "")
	if got := v.Float(f, "z1", "c1", 4); got != 3 {
		t.Errorf("cluster value removed: %v, want the zone's 3", got)
	}
	before := v.Version
	if err := v.Apply(settings.PingTimeout, settings.Global, "", "1y"); err == nil || v.Version != before {
		t.Errorf("invalid change: err %v, version %d → %d", err, before, v.Version)
	}
	must(settings.PingTimeout, settings.Global, "", "20s")
	if got := v.Duration(settings.PingTimeout, "", "", 0); got != 20*time.Second {
		t.Errorf("ping.timeout = %v", got)
	}
}
