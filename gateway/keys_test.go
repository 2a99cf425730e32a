package gateway

import (
	"strings"
	"testing"
)

func TestNewAPIKeyShape(t *testing.T) {
	key, id, hash, err := NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "vmp_"+id+"_") || len(id) != 12 || hash != HashAPIKey(key) || len(hash) != 64 {
		t.Fatalf("key %q id %q hash %q", key, id, hash)
	}
	got, ok := ParseAPIKey(key)
	if !ok || got != id {
		t.Fatalf("ParseAPIKey(%q) = %q, %v", key, got, ok)
	}
	if !hashMatches(key, strings.ToUpper(hash)) || hashMatches(key+"x", hash) {
		t.Fatal("hashMatches disagrees with the hash")
	}
	other, _, _, _ := NewAPIKey()
	if other == key {
		t.Fatal("two keys alike")
	}
}

func TestParseAPIKey(t *testing.T) {
	good := "vmp_0123456789ab_" + strings.Repeat("A", 43)
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{good, true},
		{"vmp_0123456789ab_" + strings.Repeat("-", 42) + "_", true},
		{"", false},
		{"vmp_", false},
		{"xyz_0123456789ab_" + strings.Repeat("A", 43), false},
		{"vmp_0123456789AB_" + strings.Repeat("A", 43), false}, // upper-case hex
		{"vmp_0123456789a_" + strings.Repeat("A", 44), false},  // short id
		{"vmp_0123456789ab_" + strings.Repeat("A", 42), false}, // short secret
		{"vmp_0123456789ab-" + strings.Repeat("A", 43), false},
		{"vmp_0123456789ab_" + strings.Repeat("A", 42) + "=", false},
		{"vmp_0123456789ab_" + strings.Repeat("A", 42) + "+", false},
	} {
		if _, ok := ParseAPIKey(tc.key); ok != tc.ok {
			t.Errorf("ParseAPIKey(%q) ok = %v, want %v", tc.key, ok, tc.ok)
		}
	}
}
