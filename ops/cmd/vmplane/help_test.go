package main

import (
	"strings"
	"testing"

	"github.com/vmplane/vmplane/ops/roles"
)

// A role asked for its flags starts nothing (no metrics listener that a
// running stack holds), so that -h prints them whatever runs.
func TestWantsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"-h"}, true},
		{[]string{"--hosts", "4", "--help"}, true},
		{[]string{"-help"}, true},
		{[]string{"--hosts", "4"}, false},
		{[]string{"--", "-h"}, false},
		{nil, false},
	} {
		if got := wantsHelp(tc.args); got != tc.want {
			t.Errorf("wantsHelp(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// The usage names every processor kind there is.
func TestUsageNamesEveryProcessorKind(t *testing.T) {
	line := ""
	for _, l := range strings.Split(usage, "\n") {
		if strings.Contains(l, "vmplane processor") {
			line = l
		}
	}
	for _, kind := range roles.ProcessorKinds {
		if !strings.Contains(line, kind+"|") && !strings.Contains(line, "|"+kind+" ") {
			t.Errorf("the usage's processor line %q does not name %s", line, kind)
		}
	}
}
