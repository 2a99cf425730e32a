package linux

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// rootfs is the guest's own files: busybox init's table, the boot script,
// mdev's rules and the ACPI power button's handler.
//
//go:embed rootfs
var rootfs embed.FS

// Config says what a template is built from.
type Config struct {
	// KernelRoot is a tree holding one Debian kernel package's files:
	// boot/vmlinuz-<version> and lib/modules/<version>/ (default
	// DefaultKernelRoot, where ops/install.sh unpacks it; "/" reads an
	// installed kernel).
	KernelRoot string
	// Busybox is a statically linked busybox (default /bin/busybox, from
	// Debian's busybox-static).
	Busybox string
	// DiskMB is the virtual size of the template's disk (default 1024).
	DiskMB int
}

// DefaultKernelRoot is where ops/install.sh unpacks Debian's kernel
// package.
const DefaultKernelRoot = "/usr/local/lib/vmplane/linux"

// The files of a template directory.
const (
	KernelName = "vmlinuz"
	InitrdName = "initrd.img"
	DiskName   = "disk.qcow2"
)

func (c Config) withDefaults() Config {
	if c.KernelRoot == "" {
		c.KernelRoot = DefaultKernelRoot
	}
	if c.Busybox == "" {
		c.Busybox = "/bin/busybox"
	}
	if c.DiskMB <= 0 {
		c.DiskMB = 1024
	}
	return c
}

// Ensure makes the template directory dir unless it is there already: a
// template's disk is the backing file of every root volume made of it, and
// must not change under them. It is built beside dir and renamed into
// place, so a crash leaves no template or a whole one.
func Ensure(ctx context.Context, cfg Config, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, DiskName)); err == nil {
		return nil
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("template %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".new-")
	if err != nil {
		return fmt.Errorf("template %s: %w", dir, err)
	}
	// Gone after the rename; what a failure left otherwise, best effort:
	// a leftover is a hidden directory the next build ignores.
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := Build(ctx, cfg, tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("template %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, DiskName)); serr == nil {
			return nil // another builder got there first
		}
		return fmt.Errorf("template %s: %w", dir, err)
	}
	return nil
}

// Build writes a template into the existing directory dir: the kernel, an
// initramfs and a blank qcow2 disk. The same inputs give the same
// initramfs, byte for byte.
func Build(ctx context.Context, cfg Config, dir string) error {
	cfg = cfg.withDefaults()
	kernel, modDir, err := findKernel(cfg.KernelRoot)
	if err != nil {
		return err
	}
	initrd, err := Initramfs(cfg.Busybox, modDir)
	if err != nil {
		return err
	}
	k, err := os.ReadFile(kernel)
	if err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, KernelName), k, 0o644); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, InitrdName), initrd, 0o644); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2",
		filepath.Join(dir, DiskName), strconv.Itoa(cfg.DiskMB)+"M").CombinedOutput()
	if err != nil {
		return fmt.Errorf("template disk: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// findKernel returns the one kernel under root and its modules directory.
func findKernel(root string) (kernel, modules string, err error) {
	found, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	var versions []string
	for _, k := range found {
		v := strings.TrimPrefix(filepath.Base(k), "vmlinuz-")
		if st, err := os.Stat(filepath.Join(root, "lib", "modules", v, "kernel")); err == nil && st.IsDir() {
			versions = append(versions, v)
		}
	}
	switch len(versions) {
	case 0:
		return "", "", fmt.Errorf("no kernel with its modules under %s (boot/vmlinuz-<version>, lib/modules/<version>): run ops/install.sh", root)
	case 1:
	default:
		return "", "", fmt.Errorf("kernels %v under %s: keep one", versions, root)
	}
	v := versions[0]
	return filepath.Join(root, "boot", "vmlinuz-"+v), filepath.Join(root, "lib", "modules", v), nil
}

// Initramfs returns the gzipped initramfs: busybox as /init (its init
// reads /etc/inittab), the files of rootfs, and Modules with what they
// depend on under /lib/modules, listed in load order in /etc/modules.
func Initramfs(busybox, modDir string) ([]byte, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("busybox: %w (install busybox-static: ops/install.sh)", err)
	}
	if err := static(busybox); err != nil {
		return nil, err
	}
	tree, builtin, err := readModules(modDir)
	if err != nil {
		return nil, err
	}
	mods, err := loadOrder(tree, builtin, Modules)
	if err != nil {
		return nil, err
	}
	a := newArchive()
	for _, d := range []string{"bin", "dev", "etc", "lib", "lib/modules", "proc", "root", "sbin", "sys", "tmp", "usr", "usr/bin", "usr/sbin", "var", "var/log", "var/run"} {
		a.dir(d)
	}
	// The kernel opens the console before it runs /init.
	a.char("dev/console", 0o600, 5, 1)
	a.file("bin/busybox", 0o755, bb)
	a.link("bin/sh", "busybox")
	a.link("init", "bin/busybox")
	if err := addRootfs(a); err != nil {
		return nil, err
	}
	var list strings.Builder
	for _, m := range mods {
		b, err := os.ReadFile(m.path)
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", m.name, err)
		}
		a.file("lib/modules/"+m.name+".ko", 0o644, b)
		list.WriteString(m.name + "\n")
	}
	a.file("etc/modules", 0o644, []byte(list.String()))
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := a.writeTo(zw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// addRootfs adds the embedded files: scripts executable, the rest not.
func addRootfs(a *archive) error {
	return fs.WalkDir(rootfs, "rootfs", func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == "rootfs" {
			return err
		}
		name := strings.TrimPrefix(p, "rootfs/")
		if e.IsDir() {
			a.dir(name)
			return nil
		}
		b, err := rootfs.ReadFile(p)
		if err != nil {
			return err
		}
		perm := uint32(0o644)
		if bytes.HasPrefix(b, []byte("#!")) {
			perm = 0o755
		}
		a.file(path.Clean(name), perm, b)
		return nil
	})
}

// static refuses a dynamically linked busybox: the initramfs has no
// libraries.
func static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("busybox %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("busybox " + path + " is dynamically linked: install busybox-static")
		}
	}
	return nil
}
