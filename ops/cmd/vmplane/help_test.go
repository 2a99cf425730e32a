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

// A secret from the environment never shows in -h: the flag package
// prints defaults, and usage errors print -h.
func TestHelpHidesSecrets(t *testing.T) {
	for _, env := range []string{"VMPLANE_KAFKA_PASSWORD", "VMPLANE_KAFKA_OAUTH_TOKEN", "VMPLANE_KAFKA_OAUTH_CLIENT_SECRET",
		"VMPLANE_CH_PASSWORD", "VMPLANE_CH_ANALYST_PASSWORD"} {
		t.Setenv(env, "s3cret-"+env)
	}
	f := newFlags("gateway")
	k := f.kafka()
	c := f.clickhouse()
	var out strings.Builder
	f.SetOutput(&out)
	f.PrintDefaults()
	if strings.Contains(out.String(), "s3cret") {
		t.Fatalf("-h shows a secret:\n%s", out.String())
	}
	if err := f.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if *k.password != "s3cret-VMPLANE_KAFKA_PASSWORD" || *k.oauthToken != "s3cret-VMPLANE_KAFKA_OAUTH_TOKEN" || *c.password != "s3cret-VMPLANE_CH_PASSWORD" {
		t.Fatalf("the secrets did not reach the flags: %q %q %q", *k.password, *k.oauthToken, *c.password)
	}
}
