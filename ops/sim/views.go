package sim

import (
	"github.com/vmplane/vmplane/schemas"
)

// views fold what the log has committed, as a reader with read_committed
// sees it: the latest state of every VM, zone, host and lease zone, and
// every job's life from vm.events.v1. The invariants look only at these
// and at the hypervisor's truth, never inside a processor.
type views struct {
	cursor   map[tp]int64
	vms      map[string]*schemas.VmRecord
	zones    map[string]*schemas.ZoneRecord
	hosts    map[string]*schemas.HostRecord
	leases   map[string]*schemas.LeaseZoneRecord
	jobs     map[string]*jobLife
	outcomes map[string]int
	// fresh lists the vm.events records of the last fold, in log order
	// per partition.
	fresh []any
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
	return &views{cursor: map[tp]int64{}, vms: map[string]*schemas.VmRecord{}, zones: map[string]*schemas.ZoneRecord{},
		hosts: map[string]*schemas.HostRecord{}, leases: map[string]*schemas.LeaseZoneRecord{}, jobs: map[string]*jobLife{},
		outcomes: map[string]int{}}
}

// fold reads what was committed since the last fold.
func (v *views) fold(w *world) {
	v.fresh = v.fresh[:0]
	foldState(w, v, schemas.TopicVmState, v.vms)
	foldState(w, v, schemas.TopicPlacementState, v.zones)
	foldState(w, v, schemas.TopicHostState, v.hosts)
	foldState(w, v, schemas.TopicLeaseState, v.leases)
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

func foldState[S any](w *world, v *views, topic string, into map[string]S) {
	for part := range w.log.partitions(topic) {
		at := tp{topic, part}
		for o := v.cursor[at]; o < w.log.end(at); o++ {
			e, _ := w.log.read(at, o)
			if e.value == nil {
				delete(into, e.key)
				continue
			}
			s, err := decodeState[S](e.value)
			if err != nil {
				w.fail("%s %d@%d does not decode: %v", topic, part, o, err)
				return
			}
			into[e.key] = s
		}
		v.cursor[at] = w.log.end(at)
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
	case *schemas.JobStepped:
		ref = e.JobRef
	case *schemas.JobSucceeded:
		ref, end = e.JobRef, "succeeded:"+e.VmState
	case *schemas.JobFailed:
		ref, end = e.JobRef, "failed:"+e.VmState
	case *schemas.JobCancelled:
		ref, end = e.JobRef, "cancelled:"+e.VmState
	case *schemas.JobRejected:
		ref, end = e.JobRef, "rejected:"
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
		j.accepted, j.queued, j.running = true, e.Queued, !e.Queued
	case *schemas.JobStepped:
		j.running = true
	}
	if end != "" {
		j.ends = append(j.ends, end)
		j.running = false
		kind := end[:len(end)-len(afterColon(end))-1]
		v.outcomes[kind]++
		// A cancelled job was cut short by a Terminate, which runs on at
		// once: the VM does not rest there.
		if j.accepted && kind != "rejected" && kind != "cancelled" {
			w.checks["job ends in a stationary state"]++
			if st := afterColon(end); !stationary(st) {
				w.fail("job %s (%s of %s) ended %s in a state that is not stationary: %q", ref.JobID, ref.JobType, ref.VmID, kind, st)
			}
		}
	}
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
