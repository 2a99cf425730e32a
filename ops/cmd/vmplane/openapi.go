package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vmplane/vmplane/gateway"
)

// runOpenAPI writes the gateway's OpenAPI document to --out, or to stdout:
// the document needs no stack, so make check lints it from here. A file is
// written beside its place and renamed into it, never left half written.
func runOpenAPI(args []string) error {
	f := newFlags("openapi")
	out := f.str("out", "VMPLANE_OPENAPI_OUT", "", "file to write the document to (default: stdout)")
	if err := f.Parse(args); err != nil {
		return err
	}
	doc, err := gateway.OpenAPIDocument()
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := os.Stdout.Write(doc)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".openapi-*.json")
	if err != nil {
		return err
	}
	// Gone once renamed into place; otherwise it is a half-written file.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(doc); err != nil {
		_ = tmp.Close() // the write's error is the one to tell
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), *out)
}
