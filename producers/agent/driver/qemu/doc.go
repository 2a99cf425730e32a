// Package qemu is the agent driver for real QEMU guests: one
// qemu-system-x86_64 process per VM, driven over QMP by a client of its own
// (qmp.go). It owns the processes it starts, their QMP sockets and the
// per-VM directory (a tiny qcow2 disk, sockets, suspend images) under
// Config.Dir, which plays the part of storage shared by the driver's hosts.
//
// Power changes QEMU announces (STOP, RESUME, SHUTDOWN, RESET, POWERDOWN)
// and a process exit are sent on Changes at once, so an out-of-band change
// — an operator's `quit` on the VM's second QMP socket (ext.qmp), a kill —
// is reported without waiting for the next report round.
//
// Its hosts share this machine and this agent, so investigating one
// (fence.go) can say little: a host is Up while its agent runs, and
// fencing kills the host's guests rather than powering anything off.
//
// It never decides anything: what to run where is the control plane's job.
// Guests boot no OS (the firmware finds nothing to boot), which is all the
// control plane can observe anyway and keeps them small: 32 MiB under TCG
// when /dev/kvm is not usable.
package qemu
