// Package fleet generates a busy fleet's history, the records the journal
// projector reads, for the journal's benchmarks (benchmarks/journal and
// projectors/journal's BenchmarkJournalIngest). It is test data: no role
// imports it.
package fleet

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// History generates the records a busy fleet writes to the topics the
// journal reads: a mix of jobs (Deploy,
// Start, Stop, Reboot, Migrate, Resize, Terminate, HARestart) with the steps
// the VM processor writes for them, about 8 % of them failed, cancelled or
// rejected, some queued behind another; the VM's state change after each job
// and some power observations; a host status change every 10 jobs and a
// lease notification every 25. Job i is the same whatever range it is
// generated in, so a large history can be generated in pieces.
type History struct {
	// VMs and Hosts the jobs spread over; defaults 50,000 and 1,000.
	VMs, Hosts int
	// Start is when job 0 is accepted, Unix milliseconds.
	Start int64
	// Every is the time between two jobs' acceptances, in whole
	// milliseconds; default 1 s.
	Every time.Duration
}

// jobKind is a job type of the mix: its share, the steps it writes when it
// runs to its end, and how long it takes.
type jobKind struct {
	jobType  string
	weight   int
	origin   string
	steps    []stepKind
	rest     string // the VM's state after success
	min, max time.Duration
}

type stepKind struct{ task, step, text string }

var (
	scheduleStep = stepKind{"Scheduling", "schedule", "asking placement for a host in zone zone-1"}
	jobKinds     = []jobKind{
		{"Deploy", 15, schemas.OriginAPI, []stepKind{scheduleStep,
			{"Networking", "network", "allocating the network of the VM on host %s"},
			{"BlockDeviceMapping", "block_devices", "mapping the block devices of the VM on host %s"},
			{"Spawning", "spawn", "starting the VM on host %s"}}, "Running", 20 * time.Second, 3 * time.Minute},
		{"Start", 20, schemas.OriginAPI, []stepKind{scheduleStep, {"Starting", "start", "starting the VM on host %s"}}, "Running", 4 * time.Second, 40 * time.Second},
		{"Stop", 20, schemas.OriginAPI, []stepKind{{"Stopping", "stop", "stopping the VM on host %s"}}, "Stopped", 2 * time.Second, 90 * time.Second},
		{"Reboot", 18, schemas.OriginAPI, []stepKind{{"Rebooting", "reboot", "rebooting the VM on host %s"}}, "Running", 8 * time.Second, 60 * time.Second},
		{"Migrate", 8, schemas.OriginAPI, []stepKind{scheduleStep, {"Migrating", "migrate", "migrating the VM live from host h-0001 to host %s"}}, "Running", 30 * time.Second, 6 * time.Minute},
		{"Resize", 4, schemas.OriginAPI, []stepKind{scheduleStep,
			{"Resizing", "stop", "stopping the VM on host %s to resize it"},
			{"Resizing", "start", "starting the VM on host %s with 4 CPU, 8192 MiB"},
			{"ResizeVerify", "verify", "the VM runs with its new size on host %s; confirm or revert the resize"}}, "Running", 20 * time.Second, 2 * time.Minute},
		{"Terminate", 12, schemas.OriginAPI, []stepKind{
			{"Deleting", "stop", "force-stopping the VM on host %s"},
			{"Deleting", "destroy", "destroying the VM and its disks on host %s"}}, "Deleted", 5 * time.Second, 45 * time.Second},
		{"HARestart", 3, schemas.OriginInternal, []stepKind{
			{"Scheduling", "schedule", "HA restart, attempt 1 of 3: asking placement for a host"},
			{"Starting", "start", "starting the VM on host %s"}}, "Running", 10 * time.Second, 2 * time.Minute},
	}
	kindWeights = func() int {
		n := 0
		for _, k := range jobKinds {
			n += k.weight
		}
		return n
	}()
	offerings = []schemas.Offering{
		{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024},
		{ID: "off-medium", Name: "medium", CPU: 2, MemoryMB: 4096, HA: true},
		{ID: "off-large", Name: "large", CPU: 4, MemoryMB: 8192, HA: true, HostTags: []string{"ssd"}},
	}
	failReasons = []string{"Timeout", "AgentError", "PlacementFailed", "UnexpectedPowerState"}
)

func (h History) withDefaults() History {
	if h.VMs <= 0 {
		h.VMs = 50_000
	}
	if h.Hosts <= 0 {
		h.Hosts = 1_000
	}
	if h.Every < time.Millisecond {
		h.Every = time.Second
	}
	return h
}

// Records are the records of jobs from (included) to to (excluded), in the
// order the log holds them per VM.
func (h History) Records(from, to int) []schemas.Record {
	h = h.withDefaults()
	out := make([]schemas.Record, 0, (to-from)*7)
	for i := from; i < to; i++ {
		out = h.job(out, i)
	}
	return out
}

// job appends the records of job i.
func (h History) job(out []schemas.Record, i int) []schemas.Record {
	rng := rand.New(rand.NewPCG(uint64(i), 0x6a6f75726e616c))
	n := rng.IntN(kindWeights)
	k := jobKinds[0]
	for _, c := range jobKinds {
		if n < c.weight {
			k = c
			break
		}
		n -= c.weight
	}
	vmN := rng.IntN(h.VMs)
	vm := fmt.Sprintf("vm-%07d", vmN)
	host := fmt.Sprintf("h-%04d", rng.IntN(h.Hosts))
	account := fmt.Sprintf("acct-%03d", vmN%300)
	at := h.Start + int64(i)*h.Every.Milliseconds() + rng.Int64N(h.Every.Milliseconds())
	took := k.min + time.Duration(rng.Int64N(int64(k.max-k.min)))
	ref := schemas.JobRef{JobID: fmt.Sprintf("job-%09d", i), VmID: vm, Account: account, JobType: k.jobType, Origin: k.origin, At: at}
	rec := func(v any) { out = append(out, schemas.Record{Topic: schemas.TopicVmEvents, Key: vm, Value: v}) }

	acc := &schemas.JobAccepted{JobRef: ref}
	if rng.IntN(10) == 0 {
		acc.Queued, acc.Position = true, int32(1+rng.IntN(2))
	}
	rec(acc)
	outcome := rng.IntN(1000)
	steps := k.steps
	switch {
	case outcome < 25: // rejected: no steps
		ref.At = at + int64(rng.IntN(50))
		rec(&schemas.JobRejected{JobRef: ref, Reason: "InvalidState",
			Detail: k.jobType + " is not allowed while the VM is " + k.rest, AllowedActions: []string{"start", "terminate", "snapshot"}})
		return h.beside(out, i, rng, at)
	case outcome < 65: // failed part way
		steps = steps[:1+rng.IntN(len(steps))]
	case outcome < 80: // cancelled part way
		steps = steps[:rng.IntN(len(steps))]
	}
	epoch := int64(1 + rng.IntN(40))
	stepAt := func(s int) int64 { return at + int64(took.Milliseconds())*int64(s)/int64(len(k.steps)+1) }
	rec(vmChanged(vm, account, host, ref.JobID, firstTask(steps), "Running", "job "+ref.JobID+" started", epoch, vmN, at+1))
	for s, st := range steps {
		ref.At = stepAt(s + 1)
		text := st.text
		if len(text) > 2 && text[len(text)-2:] == "%s" {
			text = text[:len(text)-2] + host
		}
		obj := `{"command_id":"cmd-` + strconv.Itoa(i) + "-" + strconv.Itoa(s) + `","epoch":` + strconv.FormatInt(epoch, 10) + `,"host_id":"` + host + `"}`
		if st.step == "schedule" {
			obj = `{"zone_id":"zone-1","offering":"` + offerings[vmN%len(offerings)].Name + `"}`
		}
		rec(&schemas.JobStepped{JobRef: ref, Seq: int32(s + 1), TaskState: st.task, Step: st.step, Text: text, Obj: obj})
	}
	ref.At = at + took.Milliseconds()
	rest := k.rest
	switch {
	case outcome < 65:
		rest = "Stopped"
		reason := failReasons[rng.IntN(len(failReasons))]
		rec(&schemas.JobFailed{JobRef: ref, Reason: reason, Detail: fmt.Sprintf("%s: host %s did not answer the command in time", reason, host), VmState: rest, StartedAt: at})
	case outcome < 80:
		rest = "Deleted"
		rec(&schemas.JobCancelled{JobRef: ref, Reason: fmt.Sprintf("Cancelled by terminate job job-%09d", i+1), VmState: rest, StartedAt: at})
	default:
		rec(&schemas.JobSucceeded{JobRef: ref, VmState: rest, StartedAt: at})
	}
	rec(vmChanged(vm, account, host, ref.JobID, "", rest, k.jobType+" job "+ref.JobID+" ended", epoch, vmN, ref.At+1))
	if rest == "Running" && rng.IntN(4) == 0 {
		rec(&schemas.PowerStateObserved{VmID: vm, HostID: host, PowerState: "PowerOn", Count: 1, At: ref.At + 60_000})
	}
	return h.beside(out, i, rng, at)
}

// beside appends the host and lease records that come with every 10th and
// 25th job.
func (h History) beside(out []schemas.Record, i int, rng *rand.Rand, at int64) []schemas.Record {
	if i%10 == 0 {
		host := fmt.Sprintf("h-%04d", rng.IntN(h.Hosts))
		status := []string{"Up", "Disconnected", "Down", "Up"}[rng.IntN(4)]
		out = append(out, schemas.Record{Topic: schemas.TopicHostStatus, Key: host, Value: &schemas.HostStatus{
			HostID: host, Name: "host-" + host, ZoneID: "zone-1", PodID: "pod-1", ClusterID: "cluster-" + strconv.Itoa(rng.IntN(8)),
			Hypervisor: "qemu", Status: status, ResourceState: "Enabled", Reservable: status == "Up",
			CPU: 64, MemoryMB: 262_144, CPUOvercommit: 4, MemOvercommit: 1.5, Tags: []string{"ssd"},
			Reason: "agent reported " + status, UpdatedAt: at + 1}})
	}
	if i%25 == 0 {
		out = append(out, schemas.Record{Topic: schemas.TopicLeaseEvents, Key: "zone-1", Value: &schemas.LeaseStatusChanged{
			LeaseID: fmt.Sprintf("lease-%03d", rng.IntN(100)), ZoneID: "zone-1", Project: "acme", Name: "nightly-batch",
			Status: "ACTIVE", Degraded: rng.IntN(5) == 0, Event: "healed", Detail: "every reserved host is up again", At: at + 2}})
	}
	return out
}

func firstTask(steps []stepKind) string {
	if len(steps) == 0 {
		return "Scheduling"
	}
	return steps[0].task
}

// vmChanged is the VmStateChanged the processor writes as a job starts
// (task set) or ends (task empty, the VM at rest).
func vmChanged(vm, account, host, job, task, state, reason string, epoch int64, n int, at int64) *schemas.VmStateChanged {
	power, actions := "PowerOn", []string{"stop", "reboot", "migrate", "resize", "snapshot", "terminate"}
	switch state {
	case "Stopped":
		power, actions = "PowerOff", []string{"start", "resize", "snapshot", "terminate"}
	case "Deleted":
		power, actions, host = "PowerOff", nil, ""
	}
	return &schemas.VmStateChanged{
		VmID: vm, Name: "web-" + strconv.Itoa(n), Account: account, ZoneID: "zone-1",
		Offering: offerings[n%len(offerings)], HA: n%3 != 0,
		VmState: state, TaskState: task, PowerState: power, PowerHost: host, LegacyState: state,
		HostID: host, Epoch: epoch, JobID: job, AllowedActions: actions, Reason: reason,
		PowerStateUpdateTime: at, PowerStateUpdateCount: 1, CreatedAt: at - 86_400_000, UpdatedAt: at,
	}
}
