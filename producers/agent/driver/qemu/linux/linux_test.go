package linux

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// kernelModules is the modules directory of the kernel ops/install.sh
// unpacked; the test fails without it, as CI runs install.sh first.
func kernelModules(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("reads the kernel package unpacked by ops/install.sh")
	}
	_, mods, err := findKernel(DefaultKernelRoot)
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

// TestInitramfs builds the initramfs twice (the same bytes), reads it back
// as the kernel would and checks what the guest needs is there: init, the
// modules in an order where each follows what it depends on.
func TestInitramfs(t *testing.T) {
	mods := kernelModules(t)
	a, err := Initramfs("/bin/busybox", mods)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Initramfs("/bin/busybox", mods)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the same inputs differ")
	}
	files := readCpio(t, a)
	if files["init"] != "bin/busybox" || files["bin/sh"] != "busybox" {
		t.Fatalf("init %q, sh %q", files["init"], files["bin/sh"])
	}
	for _, f := range []string{"etc/inittab", "etc/init.d/rcS", "etc/acpi/PWRF/00000080", "dev/console", "bin/busybox"} {
		if _, ok := files[f]; !ok {
			t.Errorf("no %s", f)
		}
	}
	order := strings.Fields(files["etc/modules"])
	for _, m := range Modules {
		if !slices.Contains(order, m) {
			t.Errorf("module %s not loaded (order %v)", m, order)
		}
	}
	tree, builtin, err := readModules(mods)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range order {
		if _, ok := files["lib/modules/"+m+".ko"]; !ok {
			t.Errorf("module %s listed, not in the archive", m)
		}
		deps, err := dependencies(tree[m].path)
		if err != nil {
			t.Fatal(err)
		}
		for _, dep := range deps {
			if j := slices.Index(order, dep); !builtin[dep] && (j < 0 || j > i) {
				t.Errorf("module %s loads before its dependency %s: %v", m, dep, order)
			}
		}
	}
}

// readCpio reads a gzipped newc archive: name to content (a symlink's
// target).
func readCpio(t *testing.T, gz []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	align := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		if len(raw) < off+110 || string(raw[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(raw[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		size, nameLen := field(6), field(11)
		name := string(raw[off+110 : off+110+nameLen-1])
		data := align(off + 110 + nameLen)
		if name == "TRAILER!!!" {
			return files
		}
		files[name] = string(raw[data : data+size])
		off = align(data + size)
	}
}

// TestEnsureKeepsATemplate: a template that exists is never rewritten,
// since root volumes are overlays of its disk.
func TestEnsureKeepsATemplate(t *testing.T) {
	kernelModules(t)
	dir := filepath.Join(t.TempDir(), "tiny-linux")
	if err := Ensure(t.Context(), Config{}, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{KernelName, InitrdName, DiskName} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, InitrdName), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(t.Context(), Config{}, dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, InitrdName)); string(b) != "kept" {
		t.Fatal("an existing template was rebuilt")
	}
	if err := Ensure(t.Context(), Config{KernelRoot: t.TempDir()}, filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "install.sh") {
		t.Fatalf("no kernel: %v", err)
	}
}
