package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/vmplane/vmplane/producers/agent/driver/qemu/linux"
)

// runGuestImage writes the template directory <out>/<id>/ (vmlinuz,
// initrd.img, disk.qcow2) the QEMU driver boots root volumes of template
// id from; one that exists is kept, since root volumes are overlays of its
// disk.
func runGuestImage(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("guest-image")
	out := f.str("out", "VMPLANE_TEMPLATES_DIR", "", "the templates directory: the template is written to <out>/<id>/")
	id := f.str("id", "VMPLANE_TEMPLATE_ID", "tiny-linux", "template id")
	kernel := f.str("kernel-root", "VMPLANE_KERNEL_ROOT", linux.DefaultKernelRoot, "Debian kernel package files (boot/vmlinuz-*, lib/modules/*), unpacked by ops/install.sh; / for the installed kernel")
	busybox := f.str("busybox", "VMPLANE_BUSYBOX", "/bin/busybox", "a statically linked busybox (Debian's busybox-static)")
	if err := f.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--out is required")
	}
	if *id == "" || filepath.Base(*id) != *id || *id == "." || *id == ".." {
		return fmt.Errorf("--id %q: not a directory name", *id)
	}
	dir := filepath.Join(*out, *id)
	if err := linux.Ensure(ctx, linux.Config{KernelRoot: *kernel, Busybox: *busybox}, dir); err != nil {
		return err
	}
	log.Info("guest template ready", "dir", dir)
	return nil
}
