// Package qemu is the agent driver for real QEMU guests: one
// qemu-system-x86_64 process per VM, driven over QMP by a client of its own
// (qmp.go). It owns the per-VM directory under Config.Dir, which plays the
// part of storage shared by the driver's hosts: the record of the host the
// VM belongs to and of its disks and NICs (record.go), the QEMU pid files
// (pidfile.go), QMP and console sockets and logs of each host's process,
// the serial console's log (console.log), the suspend image, the lock that
// serializes starting it (lock.go), and a tiny qcow2 disk for a VM without
// volumes.
//
// A VM's volumes are files in its pools' directories,
// <PoolPath>/<VolumeID>.qcow2 (volfile.go): the root an overlay of its
// template's disk under Config.Templates, a data volume a blank image,
// each made once and kept. They are virtio disks, the NICs virtio-net on
// QEMU's user-mode network with the NIC's CIDR and gateway, at PCI slots
// fixed by device id (devices.go, nics.go). A root volume whose template
// has a kernel (package linux) boots it directly: the guest prints its
// boot, disks and NICs on the console, announces disks hot-plugged by the
// volume commands (volumes.go) and powers off on the ACPI power button,
// which a graceful Stop presses before it waits StopTimeout and quits.
//
// Guests are not the agent's children. Each is a daemon in a session of
// its own (launch.go), so it keeps running when the agent exits, crashes
// or is upgraded; the driver knows it by its pid file and monitor, not by
// waiting for it (process.go). A driver that starts adopts every guest of
// its hosts it finds under Config.Dir (adopt.go), so its first report
// round says what really runs; before it starts a process it reads the
// real state again under the VM's lock, so no VM ever runs twice on its
// account, even with two agents on one directory. Close quits every guest
// of the driver: the dev stack's clean shutdown; a crash loses none.
//
// Power changes QEMU announces (STOP, RESUME, SHUTDOWN, RESET, POWERDOWN)
// and a process exit are sent on Changes at once, so an out-of-band change
// — a guest that powers itself off, an operator's `quit` on the VM's
// second QMP socket (ext.qmp), a kill — is reported without waiting for
// the next report round.
//
// Its hosts share this machine and this agent, so investigating one
// (fence.go) can say little: a host is Up while its agent runs, and
// fencing kills the host's guests rather than powering anything off.
//
// It never decides anything: what to run where is the control plane's job,
// and so is a guest that no VM claims — it is reported, never killed to
// tidy up. A guest without a template boots no OS (the firmware finds
// nothing to boot), which keeps the many guests of tests small: 32 MiB.
package qemu
