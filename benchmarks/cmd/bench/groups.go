package main

import (
	"fmt"
	"slices"
	"strings"
)

// groups is the -only selection; empty runs every group.
type groups map[string]bool

var groupNames = []string{"storm", "handover", "latency", "deploy", "placement", "journal", "rebuild", "durability", "hosts"}

func parseGroups(s string) (groups, error) {
	g := groups{}
	if s == "" {
		return g, nil
	}
	for _, f := range strings.Split(s, ",") {
		if !slices.Contains(groupNames, f) {
			return nil, fmt.Errorf("-only: %q is not a scenario group (%s)", f, strings.Join(groupNames, ", "))
		}
		g[f] = true
	}
	return g, nil
}

// has tells whether group runs.
func (g groups) has(group string) bool { return len(g) == 0 || g[group] }

// alone tells whether group is the only one selected.
func (g groups) alone(group string) bool { return len(g) == 1 && g[group] }
