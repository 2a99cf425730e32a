package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, want, err string
		env             map[string]string
	}{
		{"neither", "", "", nil},
		{"the variable", "v", "", map[string]string{"PW": "v"}},
		{"the file, without its newline", "s3cret", "", map[string]string{"PW_FILE": file}},
		{"both", "", "both PW and PW_FILE are set", map[string]string{"PW": "v", "PW_FILE": file}},
		{"a missing file", "", "PW_FILE:", map[string]string{"PW_FILE": file + ".none"}},
	} {
		got, err := FromEnv(func(k string) string { return c.env[k] }, "PW")
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q, %v", c.name, got, err)
		}
	}
}
