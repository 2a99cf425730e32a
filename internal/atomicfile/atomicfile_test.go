package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	for _, want := range []string{"first", "second, longer than the first"} {
		if err := Write(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is left: %v", err)
	}
}

func TestWriteIntoMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "state.json")
	if err := Write(path, []byte("x")); err == nil {
		t.Fatal("wrote into a directory that does not exist")
	}
}
