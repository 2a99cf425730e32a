package main

import (
	"strings"
	"testing"
)

func TestParseGroups(t *testing.T) {
	for _, tc := range []struct {
		only        string
		has, hasNot []string
		alone       string // "" when no group runs alone
		err         string
	}{
		{only: "", has: groupNames},
		{only: "latency", has: []string{"latency"}, hasNot: []string{"storm", "placement", "journal", "rebuild"}, alone: "latency"},
		{only: "storm,latency", has: []string{"storm", "latency"}, hasNot: []string{"placement", "journal", "rebuild", "hosts"}},
		{only: "hosts", has: []string{"hosts"}, hasNot: []string{"storm", "latency", "placement", "journal", "rebuild", "durability"}, alone: "hosts"},
		{only: "storm,", err: `"" is not a scenario group`},
		{only: "Storm", err: `"Storm" is not a scenario group`},
		{only: "storm latency", err: `"storm latency" is not a scenario group`},
	} {
		g, err := parseGroups(tc.only)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("-only %q: err %v, want %q", tc.only, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("-only %q: %v", tc.only, err)
		}
		for _, n := range tc.has {
			if !g.has(n) {
				t.Errorf("-only %q: %s does not run", tc.only, n)
			}
		}
		for _, n := range tc.hasNot {
			if g.has(n) {
				t.Errorf("-only %q: %s runs", tc.only, n)
			}
		}
		for _, n := range groupNames {
			if g.alone(n) != (n == tc.alone) {
				t.Errorf("-only %q: alone(%s) = %v", tc.only, n, g.alone(n))
			}
		}
	}
}
