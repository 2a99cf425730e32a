package sim

import (
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// views fold what the log has committed, as a reader with read_committed
// sees it: the latest state of every VM, zone, host and lease zone, and
// every job's life from vm.events.v1. The invariants look only at these
// and at the hypervisor's truth, never inside a processor.
type views struct {
	cursor map[tp]int64
	// seen is each topic's version at the last fold: a topic that has not
	// grown since is not scanned.
	seen     map[string]uint64
	vms      map[string]*schemas.VmRecord
	zones    map[string]*schemas.ZoneRecord
	hosts    map[string]*schemas.HostRecord
	jobs     map[string]*jobLife
	outcomes map[string]int
	// running is the job each VM runs, as the events tell.
	running map[string]string
	// fresh lists the vm.events records of the last fold, in log order
	// per partition; changedVMs and changedZones the keys whose state
	// the last fold changed, sorted.
	fresh        []any
	changedVMs   []string
	changedZones []string
}

// jobLife is what the events said of one job.
type jobLife struct {
	vm       string
	jobType  string
	accepted bool
	queued   bool
	running  bool
	ends     []string
}

func newViews() *views {
	return &views{cursor: map[tp]int64{}, seen: map[string]uint64{}, vms: map[string]*schemas.VmRecord{}, zones: map[string]*schemas.ZoneRecord{},
		hosts: map[string]*schemas.HostRecord{}, jobs: map[string]*jobLife{}, outcomes: map[string]int{},
		running: map[string]string{}}
}

// fold reads what was committed since the last fold.
func (v *views) fold(w *world) {
	v.fresh = v.fresh[:0]
	v.changedVMs = foldState(w, v, schemas.TopicVmState, v.vms, v.changedVMs[:0])
	v.changedZones = foldState(w, v, schemas.TopicPlacementState, v.zones, v.changedZones[:0])
	foldState(w, v, schemas.TopicHostState, v.hosts, nil)
	if !v.grown(w, schemas.TopicVmEvents) {
		return
	}
	for part := range w.log.partitions(schemas.TopicVmEvents) {
		at := tp{schemas.TopicVmEvents, part}
		for o := v.cursor[at]; o < w.log.end(at); o++ {
			e, _ := w.log.read(at, o)
			ev, err := schemas.Unmarshal(e.value)
			if err != nil {
				w.fail("vm.events %d@%d does not decode: %v", part, o, err)
				return
			}
			v.fresh = append(v.fresh, ev)
			v.job(w, ev)
		}
		v.cursor[at] = w.log.end(at)
	}
}

// grown says whether a topic has records the views have not folded, and
// marks them folded.
func (v *views) grown(w *world, topic string) bool {
	ver := w.log.version(topic)
	if ver == v.seen[topic] {
		return false
	}
	v.seen[topic] = ver
	return true
}

// foldState applies a changelog's new records to a view and appends the
// keys that changed to changed, sorted and once each.
func foldState[S any](w *world, v *views, topic string, into map[string]S, changed []string) []string {
	if !v.grown(w, topic) {
		return changed
	}
	for part := range w.log.partitions(topic) {
		at := tp{topic, part}
		for o := v.cursor[at]; o < w.log.end(at); o++ {
			e, _ := w.log.read(at, o)
			changed = append(changed, e.key)
			if e.value == nil {
				delete(into, e.key)
				continue
			}
			s, err := decodeState[S](e.value)
			if err != nil {
				w.fail("%s %d@%d does not decode: %v", topic, part, o, err)
				return changed
			}
			into[e.key] = s
		}
		v.cursor[at] = w.log.end(at)
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

// code checks that a failure's or rejection's reason is an error code
// (schemas/job_codes.go).
func (v *views) code(w *world, ref schemas.JobRef, reason string) {
	w.checks["end reason is an error code"]++
	if !schemas.IsErrorCode(reason) || reason == schemas.CodeUnknown {
		w.fail("job %s (%s of %s) ended with reason %q, not an error code", ref.JobID, ref.JobType, ref.VmID, reason)
	}
}

// caller checks that a job's start names who asked: every command of the
// world's clients names its caller, and what the system starts names
// system.
func (v *views) caller(w *world, ref schemas.JobRef, c schemas.Caller) {
	w.checks["job start names its caller"]++
	if c.Account == "" {
		w.fail("job %s (%s of %s, origin %s) starts naming no caller", ref.JobID, ref.JobType, ref.VmID, ref.Origin)
	}
}

// job follows one event of vm.events.v1 into its job's life, and checks
// the life as it goes: a job ends once, and nothing of it comes after.
func (v *views) job(w *world, ev any) {
	var ref schemas.JobRef
	end := ""
	switch e := ev.(type) {
	case *schemas.JobAccepted:
		ref = e.JobRef
		v.caller(w, ref, e.Caller)
	case *schemas.JobStepped:
		ref = e.JobRef
	case *schemas.JobSucceeded:
		ref, end = e.JobRef, "succeeded:"+e.VmState
	case *schemas.JobFailed:
		ref, end = e.JobRef, "failed:"+e.VmState
		v.code(w, ref, e.Reason)
	case *schemas.JobCancelled:
		ref, end = e.JobRef, "cancelled:"+e.VmState
		if !strings.HasPrefix(e.By, "terminate job ") {
			// Cancelled by a caller: the VM rests where the job left it.
			end = "stopped:" + e.VmState
		}
	case *schemas.JobRejected:
		ref, end = e.JobRef, "rejected:"
		v.code(w, ref, e.Reason)
		v.caller(w, ref, e.Caller)
	default:
		return
	}
	j := v.jobs[ref.JobID]
	if j == nil {
		j = &jobLife{vm: ref.VmID, jobType: ref.JobType}
		v.jobs[ref.JobID] = j
	}
	w.checks["job ends once"]++
	if len(j.ends) > 0 && j.accepted {
		w.fail("job %s (%s of %s) has %T after it ended (%v)", ref.JobID, ref.JobType, ref.VmID, ev, j.ends)
		return
	}
	switch e := ev.(type) {
	case *schemas.JobAccepted:
		j.accepted, j.queued = true, e.Queued
		if !e.Queued {
			v.run(w, ref.JobID, j)
		}
	case *schemas.JobStepped:
		v.run(w, ref.JobID, j)
	}
	if end != "" {
		wasRunning := j.running
		j.ends = append(j.ends, end)
		j.running = false
		if j.vm != "" && v.running[j.vm] == ref.JobID {
			delete(v.running, j.vm)
		}
		kind := end[:len(end)-len(afterColon(end))-1]
		byCaller := kind == "stopped"
		if byCaller {
			kind = "cancelled"
		}
		v.outcomes[kind]++
		// A job cancelled by a Terminate was cut short, and the terminate
		// runs on at once: the VM does not rest there. One a caller
		// cancelled leaves the VM at rest, unless it was queued: its end
		// shows the VM as the running job has it.
		if j.accepted && kind != "rejected" && (kind != "cancelled" || byCaller && wasRunning) && ref.VmID != "" {
			w.checks["job ends in a stationary state"]++
			if st := afterColon(end); !stationary(st) {
				w.fail("job %s (%s of %s) ended %s in a state that is not stationary: %q", ref.JobID, ref.JobType, ref.VmID, kind, st)
			}
		}
	}
}

// run marks a job running, and holds that its VM runs no other. A bulk
// job (a host's maintenance, a lease's end) is no VM's: its children are.
func (v *views) run(w *world, id string, j *jobLife) {
	j.running = true
	if j.vm == "" {
		return
	}
	w.checks["one running job per VM"]++
	if other, ok := v.running[j.vm]; ok && other != id {
		w.fail("VM %s runs two jobs: %s (%s) and %s (%s)", j.vm, other, v.jobs[other].jobType, id, j.jobType)
		return
	}
	v.running[j.vm] = id
}

func afterColon(s string) string {
	for i := range len(s) {
		if s[i] == ':' {
			return s[i+1:]
		}
	}
	return ""
}

// stationary lists the states a VM rests in between jobs.
func stationary(s string) bool {
	switch s {
	case "Active", "Stopped", "Paused", "Suspended", "Rescued", "Resized", "Error", "Deleted", "Expunged":
		return true
	}
	return false
}
