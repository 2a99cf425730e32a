package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/vmplane/vmplane/gateway"
)

// vmplane openapi --out writes the document the gateway serves, with no
// stack running, and leaves no temporary file beside it.
func TestOpenAPIWritesTheDocument(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "openapi.json")
	if err := runOpenAPI([]string{"--out", out}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := gateway.OpenAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"openapi": "3.1.0"`)) {
		t.Fatalf("wrote %d bytes, not the document of %d", len(got), len(want))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left %d files in %s", len(entries), dir)
	}
}
