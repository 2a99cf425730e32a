package linux

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Modules are the kernel modules the guest loads, by name: the virtio PCI
// transport, its disks and NICs, and the ACPI power button with the event
// device busybox acpid reads it through. What they depend on is added.
var Modules = []string{"virtio_pci", "virtio_blk", "virtio_net", "button", "evdev"}

// module is one kernel module file.
type module struct {
	name string
	path string
	deps []string
}

// moduleTree is the modules of one kernel, by name.
type moduleTree map[string]module

// readModules indexes the modules under dir (lib/modules/<version>). The
// kernel package ships no modules.dep (its postinst runs depmod), so a
// module's dependencies are read where depmod reads them: the "depends="
// line of its .modinfo section. Built-in modules (modules.builtin) need no
// file.
func readModules(dir string) (moduleTree, map[string]bool, error) {
	tree := moduleTree{}
	err := filepath.WalkDir(filepath.Join(dir, "kernel"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !strings.HasSuffix(p, ".ko") {
			return nil
		}
		name := strings.ReplaceAll(strings.TrimSuffix(e.Name(), ".ko"), "-", "_")
		tree[name] = module{name: name, path: p}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kernel modules in %s: %w", dir, err)
	}
	builtin := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			builtin[strings.ReplaceAll(strings.TrimSuffix(filepath.Base(l), ".ko"), "-", "_")] = true
		}
	}
	return tree, builtin, nil
}

// dependencies reads the depends= line of a module's .modinfo.
func dependencies(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("module %s: no .modinfo section", path)
	}
	info, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", path, err)
	}
	for _, kv := range bytes.Split(info, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			if len(v) == 0 {
				return nil, nil
			}
			return strings.Split(string(v), ","), nil
		}
	}
	return nil, nil
}

// loadOrder returns the modules to insmod for want, each after what it
// depends on; built-in ones are left out.
func loadOrder(tree moduleTree, builtin map[string]bool, want []string) ([]module, error) {
	var order []module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		name = strings.ReplaceAll(name, "-", "_")
		switch {
		case state[name] == 2:
			return nil
		case state[name] == 1:
			return fmt.Errorf("module %s: dependency cycle", name)
		case builtin[name]:
			state[name] = 2
			return nil
		}
		m, ok := tree[name]
		if !ok {
			return fmt.Errorf("module %s (needed by %s): neither a file nor built in", name, from)
		}
		state[name] = 1
		deps, err := dependencies(m.path)
		if err != nil {
			return err
		}
		for _, dep := range deps {
			if err := visit(dep, name); err != nil {
				return err
			}
		}
		m.deps = deps
		state[name] = 2
		order = append(order, m)
		return nil
	}
	for _, w := range want {
		if err := visit(w, "the guest"); err != nil {
			return nil, err
		}
	}
	return order, nil
}
