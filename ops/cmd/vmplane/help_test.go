package main

import "testing"

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
