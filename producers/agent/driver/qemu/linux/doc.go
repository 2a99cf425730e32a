// Package linux builds the Linux that the QEMU driver's guests boot: a
// template directory holding a Debian kernel (vmlinuz), an initramfs of the
// project's own making (initrd.img) and a small blank qcow2 disk
// (disk.qcow2) that root volumes are overlays of.
//
// The kernel and its modules come from Debian's kernel package, which
// ops/install.sh unpacks under DefaultKernelRoot; busybox from Debian's
// busybox-static. The initramfs is written here, a cpio "newc" archive
// gzipped, with fixed times and owners so that the same inputs give the
// same bytes. Its init (busybox init, rootfs/etc) prints its boot on the
// serial console, loads the virtio and ACPI modules, sets each NIC up with
// the address the kernel command line gives (vmplane.nic=mac,ip/prefix,gw),
// lists disks and NICs, announces disks plugged in or out later, keeps a
// shell on ttyS0 and powers off on the ACPI power button.
//
// It never downloads anything and never changes a template that exists:
// the disks of root volumes are overlays of its disk.
package linux
