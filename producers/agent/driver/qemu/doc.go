// Package qemu is the agent driver for real QEMU guests: one
// qemu-system-x86_64 process per VM, driven over QMP by a client of its own
// (qmp.go). It owns the per-VM directory under Config.Dir, which plays the
// part of storage shared by the driver's hosts: a tiny qcow2 disk, the
// record of the host the VM belongs to (record.go), the QEMU pid files
// (pidfile.go), QMP sockets and logs of each host's process, the suspend
// image, and the lock that serializes starting it (lock.go).
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
// — an operator's `quit` on the VM's second QMP socket (ext.qmp), a kill —
// is reported without waiting for the next report round.
//
// Its hosts share this machine and this agent, so investigating one
// (fence.go) can say little: a host is Up while its agent runs, and
// fencing kills the host's guests rather than powering anything off.
//
// It never decides anything: what to run where is the control plane's job,
// and so is a guest that no VM claims — it is reported, never killed to
// tidy up. Guests boot no OS (the firmware finds nothing to boot), which is
// all the control plane can observe anyway and keeps them small: 32 MiB
// under TCG when /dev/kvm is not usable.
package qemu
