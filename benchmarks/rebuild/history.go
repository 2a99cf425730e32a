package rebuild

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// emitter receives the records of a history in log order.
type emitter func(topic, key string, v any)

// rec is one record of a history.
type rec struct {
	topic, key string
	v          any
}

// phase is what one VM does in one step of its wave: the records it
// writes at time at (Unix milliseconds).
type phase func(at int64) []rec

// hist is a history being written.
type hist struct {
	emit          emitter
	n, written    int
	hosts         int
	usedCPU       []int32
	usedMem       []int64
	hostUpdatedAt []int64
	at            int64
}

// history writes a fleet's life as the processors record it, until n
// records are written: hosts registering (host.status.v1), VMs deployed
// (command, accepted, four steps, state changes, capacity claimed), their
// first same-state power reports, reboots (one in ten timing out), stops
// and starts (capacity released and claimed again), commands rejected in
// the wrong state, VMs found off by their host (with an alert), and one VM
// in ten terminated and expunged. The event sequences follow the VM
// processor's scenario files (processors/vm/testdata). VMs live in waves of
// 250 whose records interleave phase by phase, as concurrent jobs do; a
// host in fifty goes through maintenance per wave. The log may end inside a
// wave, with jobs in flight, as a live log does. It returns the VMs whose
// deploy was written and the hosts.
func history(n int, emit emitter) (vms, hosts int) {
	const waveVMs = 250
	// About 45 records per VM and 40 VMs per host.
	hosts = max(n/45/40, 1)
	h := &hist{emit: emit, n: n, hosts: hosts, usedCPU: make([]int32, hosts), usedMem: make([]int64, hosts),
		hostUpdatedAt: make([]int64, hosts), at: 1_700_000_000_000}
	for i := range hosts {
		h.hostStatus(i, "Connecting", "Enabled")
		h.hostStatus(i, "Up", "Enabled")
	}
	for wave := 0; h.written < n; wave++ {
		lives := make([][]phase, waveVMs)
		for i := range lives {
			lives[i] = h.life(wave*waveVMs+i, hosts)
		}
		for p := 0; h.written < n; p++ {
			more := false
			for _, l := range lives {
				if p >= len(l) {
					continue
				}
				more = true
				if p == 0 {
					vms++
				}
				for _, r := range l[p](h.at) {
					h.put(r)
				}
			}
			if !more {
				break
			}
			h.at += 1000
		}
		for i := wave % 50; i < hosts; i += 50 {
			h.hostStatus(i, "Up", "PrepareForMaintenance")
			h.hostStatus(i, "Up", "Enabled")
		}
	}
	return vms, hosts
}

func (h *hist) put(r rec) {
	if h.written < h.n {
		h.emit(r.topic, r.key, r.v)
		h.written++
	}
}

func hostID(i int) string { return fmt.Sprintf("host-%05d", i) }

func (h *hist) hostStatus(i int, status, resource string) {
	h.at++
	h.put(rec{schemas.TopicHostStatus, hostID(i), &schemas.HostStatus{HostID: hostID(i), Name: hostID(i), ZoneID: "z1",
		PodID: fmt.Sprintf("pod-%d", i/400), ClusterID: fmt.Sprintf("cluster-%d", i/20), Hypervisor: "sim",
		Status: status, ResourceState: resource, Reservable: status == "Up" && resource == "Enabled",
		CPU: 64, MemoryMB: 256 << 10, CPUOvercommit: 4, MemOvercommit: 1.5, Tags: []string{"ssd"},
		LastPingAt: h.at, Reason: "agent " + status, UpdatedAt: h.at}})
}

var (
	offerings = []schemas.Offering{
		{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024},
		{ID: "off-medium", Name: "medium", CPU: 2, MemoryMB: 4096},
		{ID: "off-large", Name: "large", CPU: 4, MemoryMB: 16384},
	}
	activeActions  = []string{"reboot", "stop", "rebuild", "pause", "suspend", "rescue", "snapshot", "resize", "migrate", "terminate"}
	stoppedActions = []string{"start", "migrate", "resize", "terminate"}
	busyActions    = []string{"terminate"}
)

// vmLife is what one VM's phases share.
type vmLife struct {
	h        *hist
	id, acct string
	host     int
	off      schemas.Offering
	created  int64
	epoch    int64
	jobs     int
	vm       schemas.VmStateChanged
}

// life returns VM i's phases.
func (h *hist) life(i, hosts int) []phase {
	v := &vmLife{h: h, id: fmt.Sprintf("vm-%07d", i), acct: fmt.Sprintf("acct-%03d", i%200), host: (i * 7919) % hosts,
		off: offerings[i%len(offerings)]}
	ps := v.deploy()
	ps = append(ps, v.observed("PowerOn", 1), v.observed("PowerOn", 2), v.observed("PowerOn", 3))
	ps = append(ps, v.reboot(i%10 == 3)...)
	if i%3 == 0 {
		ps = append(ps, v.rejected("Start"))
	}
	ps = append(ps, v.stop()...)
	ps = append(ps, v.start()...)
	ps = append(ps, v.reboot(false)...)
	if i%20 == 7 {
		ps = append(ps, v.foundOff())
		ps = append(ps, v.start()...)
	}
	if i%10 == 9 {
		ps = append(ps, v.terminate()...)
	}
	return ps
}

func (v *vmLife) job(typ string, at int64) schemas.JobRef {
	v.jobs++
	return schemas.JobRef{JobID: fmt.Sprintf("%s-j%d", v.id, v.jobs), VmID: v.id, Account: v.acct, JobType: typ, Origin: "api", At: at}
}

func (v *vmLife) event(e any) rec { return rec{schemas.TopicVmEvents, v.id, e} }

func (v *vmLife) command(c any) rec { return rec{schemas.TopicVmCommands, v.id, c} }

func (v *vmLife) cmd(ref schemas.JobRef) schemas.VmCommand {
	return schemas.VmCommand{CommandID: ref.JobID, VmID: v.id, Account: v.acct, Origin: "api", IssuedAt: ref.At}
}

// state is a VmStateChanged of the VM as it now is.
func (v *vmLife) state(at int64, vmState, task, power, legacy, job, reason string, actions []string) rec {
	s := v.vm
	s.VmID, s.Name, s.Account, s.ZoneID, s.Offering = v.id, v.id, v.acct, "z1", v.off
	s.VmState, s.TaskState, s.LegacyState, s.JobID, s.Reason = vmState, task, legacy, job, reason
	s.AllowedActions, s.Epoch, s.HostID = actions, v.epoch, hostID(v.host)
	if power != "" && power != s.PowerState {
		s.PowerState, s.PowerHost, s.PowerStateUpdateTime, s.PowerStateUpdateCount = power, hostID(v.host), at, 0
	}
	s.CreatedAt, s.UpdatedAt = v.created, at
	v.vm = s
	return v.event(&s)
}

func (v *vmLife) step(ref schemas.JobRef, seq int32, task, step, text string) rec {
	return v.event(&schemas.JobStepped{JobRef: ref, Seq: seq, TaskState: task, Step: step, Text: text,
		Obj: fmt.Sprintf(`{"epoch":%d,"host_id":%q}`, v.epoch, hostID(v.host))})
}

func (v *vmLife) claim(ref schemas.JobRef) rec {
	h := v.h
	h.usedCPU[v.host] += v.off.CPU
	h.usedMem[v.host] += v.off.MemoryMB
	return rec{schemas.TopicPlacementEvents, "z1", &schemas.CapacityAllocated{ZoneID: "z1", HostID: hostID(v.host), VmID: v.id,
		Account: v.acct, CPU: v.off.CPU, MemoryMB: v.off.MemoryMB, HostUsedCPU: h.usedCPU[v.host], HostUsedMemory: h.usedMem[v.host],
		RequestID: ref.JobID + "-1", At: ref.At}}
}

func (v *vmLife) release(ref schemas.JobRef) rec {
	h := v.h
	h.usedCPU[v.host] -= v.off.CPU
	h.usedMem[v.host] -= v.off.MemoryMB
	return rec{schemas.TopicPlacementEvents, "z1", &schemas.CapacityReleased{ZoneID: "z1", HostID: hostID(v.host), VmID: v.id,
		CPU: v.off.CPU, MemoryMB: v.off.MemoryMB, HostUsedCPU: h.usedCPU[v.host], HostUsedMemory: h.usedMem[v.host],
		RequestID: ref.JobID + "-release", At: ref.At}}
}

func (v *vmLife) deploy() []phase {
	var ref schemas.JobRef
	return []phase{
		func(at int64) []rec {
			v.created, v.epoch = at, 1
			ref = v.job("Deploy", at)
			return []rec{
				v.command(&schemas.Deploy{VmCommand: v.cmd(ref), Name: v.id, ZoneID: "z1", Offering: v.off}),
				v.event(&schemas.JobAccepted{JobRef: ref}),
				v.step(ref, 1, "Scheduling", "schedule", "asking placement for a host in zone z1"),
				v.state(at, "Building", "Scheduling", "PowerUnknown", "Starting", ref.JobID, "asking placement for a host in zone z1", busyActions),
			}
		},
		func(at int64) []rec {
			ref.At = at
			text := "starting the VM on host " + hostID(v.host)
			return []rec{
				v.claim(ref),
				v.step(ref, 2, "Networking", "network", "allocating the network of the VM on host "+hostID(v.host)),
				v.step(ref, 3, "BlockDeviceMapping", "block_devices", "mapping the block devices of the VM on host "+hostID(v.host)),
				v.step(ref, 4, "Spawning", "spawn", text),
				v.state(at, "Building", "Spawning", "", "Starting", ref.JobID, text, busyActions),
			}
		},
		func(at int64) []rec {
			ref.At = at
			return []rec{
				v.event(&schemas.JobSucceeded{JobRef: ref, VmState: "Active"}),
				v.state(at, "Active", "", "PowerOn", "Running", ref.JobID, "", activeActions),
			}
		},
	}
}

// observed is a same-state power report within power.state.update.limit.
func (v *vmLife) observed(power string, count int32) phase {
	return func(at int64) []rec {
		v.vm.PowerStateUpdateCount, v.vm.PowerStateUpdateTime = count, at
		return []rec{v.event(&schemas.PowerStateObserved{VmID: v.id, HostID: hostID(v.host), PowerState: power, Count: count, At: at})}
	}
}

func (v *vmLife) reboot(timeout bool) []phase {
	var ref schemas.JobRef
	return []phase{
		func(at int64) []rec {
			v.epoch++
			ref = v.job("Reboot", at)
			return []rec{
				v.command(&schemas.Reboot{VmCommand: v.cmd(ref)}),
				v.event(&schemas.JobAccepted{JobRef: ref}),
				v.step(ref, 1, "Rebooting", "reboot", "rebooting the VM on host "+hostID(v.host)),
				v.state(at, "Active", "Rebooting", "", "Running", ref.JobID, "rebooting", busyActions),
			}
		},
		func(at int64) []rec {
			ref.At = at
			if timeout {
				return []rec{
					v.event(&schemas.JobFailed{JobRef: ref, Reason: "Timeout", Detail: "RebootVm on host " + hostID(v.host) + ": no answer in 60s", VmState: "Active"}),
					v.state(at, "Active", "", "", "Running", ref.JobID, "job "+ref.JobID+" failed: Timeout", activeActions),
				}
			}
			return []rec{
				v.event(&schemas.JobSucceeded{JobRef: ref, VmState: "Active"}),
				v.state(at, "Active", "", "", "Running", ref.JobID, "", activeActions),
			}
		},
	}
}

func (v *vmLife) rejected(typ string) phase {
	return func(at int64) []rec {
		ref := v.job(typ, at)
		return []rec{
			v.command(&schemas.Start{VmCommand: v.cmd(ref)}),
			v.event(&schemas.JobRejected{JobRef: ref, Reason: "InvalidState", Detail: typ + " is not allowed in Active", AllowedActions: activeActions}),
		}
	}
}

func (v *vmLife) stop() []phase {
	var ref schemas.JobRef
	return []phase{
		func(at int64) []rec {
			v.epoch++
			ref = v.job("Stop", at)
			return []rec{
				v.command(&schemas.Stop{VmCommand: v.cmd(ref)}),
				v.event(&schemas.JobAccepted{JobRef: ref}),
				v.step(ref, 1, "Stopping", "stop", "stopping the VM on host "+hostID(v.host)),
				v.state(at, "Active", "Stopping", "", "Stopping", ref.JobID, "stopping", busyActions),
			}
		},
		func(at int64) []rec {
			return []rec{v.state(at, "Active", "Stopping", "PowerOff", "Stopping", ref.JobID, "stopping", busyActions)}
		},
		func(at int64) []rec {
			ref.At = at
			return []rec{
				v.release(ref),
				v.event(&schemas.JobSucceeded{JobRef: ref, VmState: "Stopped"}),
				v.state(at, "Stopped", "", "", "Stopped", ref.JobID, "", stoppedActions),
			}
		},
	}
}

func (v *vmLife) start() []phase {
	var ref schemas.JobRef
	return []phase{
		func(at int64) []rec {
			v.epoch++
			ref = v.job("Start", at)
			return []rec{
				v.command(&schemas.Start{VmCommand: v.cmd(ref)}),
				v.event(&schemas.JobAccepted{JobRef: ref}),
				v.step(ref, 1, "Scheduling", "schedule", "asking placement for a host in zone z1, preferring host "+hostID(v.host)),
				v.state(at, "Stopped", "Scheduling", "", "Starting", ref.JobID, "scheduling", busyActions),
			}
		},
		func(at int64) []rec {
			ref.At = at
			return []rec{
				v.claim(ref),
				v.step(ref, 2, "Starting", "start", "starting the VM on host "+hostID(v.host)),
				v.state(at, "Stopped", "Starting", "", "Starting", ref.JobID, "starting", busyActions),
			}
		},
		func(at int64) []rec {
			ref.At = at
			return []rec{
				v.event(&schemas.JobSucceeded{JobRef: ref, VmState: "Active"}),
				v.state(at, "Active", "", "PowerOn", "Running", ref.JobID, "", activeActions),
			}
		},
	}
}

// foundOff is a VM its host reports off while no job runs: the VM follows
// the fact, with an alert, and its capacity is released.
func (v *vmLife) foundOff() phase {
	return func(at int64) []rec {
		ref := schemas.JobRef{JobID: v.id + "-sync", At: at}
		return []rec{
			v.event(&schemas.PowerStateObserved{VmID: v.id, HostID: hostID(v.host), PowerState: "PowerOff", Count: 1, At: at}),
			v.state(at, "Stopped", "", "PowerOff", "Stopped", "", "found PowerOff on host "+hostID(v.host), stoppedActions),
			v.release(ref),
			v.event(&schemas.AlertRaised{AlertID: fmt.Sprintf("alert-%s-%d", v.id, at), Kind: "VmStateSync", VmID: v.id,
				HostID: hostID(v.host), Account: v.acct, Message: "VM found PowerOff while Active", At: at}),
		}
	}
}

func (v *vmLife) terminate() []phase {
	var ref schemas.JobRef
	return []phase{
		func(at int64) []rec {
			v.epoch++
			ref = v.job("Terminate", at)
			return []rec{
				v.command(&schemas.Terminate{VmCommand: v.cmd(ref)}),
				v.event(&schemas.JobAccepted{JobRef: ref}),
				v.step(ref, 1, "Deleting", "delete", "destroying the VM on host "+hostID(v.host)),
				v.state(at, "Active", "Deleting", "", "Expunging", ref.JobID, "deleting", busyActions),
			}
		},
		func(at int64) []rec {
			ref.At = at
			return []rec{
				v.release(ref),
				v.event(&schemas.JobSucceeded{JobRef: ref, VmState: "Deleted"}),
				v.state(at, "Deleted", "", "PowerOff", "Destroyed", ref.JobID, "", busyActions),
			}
		},
		func(at int64) []rec {
			return []rec{v.event(&schemas.VmExpunged{VmID: v.id, Account: v.acct, At: at})}
		},
	}
}
