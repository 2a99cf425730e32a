package telemetry

import (
	"sync"

	"github.com/vmplane/vmplane/schemas"
)

// jobs remembers when each job of this process's partitions was accepted,
// to measure its duration when its end event goes out. A job accepted
// before this process started is not counted in flight and has no
// duration: the events say when it started, but this process did not see it.
var jobs = struct {
	sync.Mutex
	started map[string]schemas.JobRef
}{started: map[string]schemas.JobRef{}}

// ObserveOutputs updates the job and power metrics from one step's input
// and outputs. It learns only from records, never from a machine's state.
func ObserveOutputs(in *schemas.Record, outs []schemas.Record) {
	if in != nil && in.Topic == schemas.TopicVmPower && len(outs) == 0 {
		// A report that changes nothing is one the update limit suppressed:
		// any other report wakes a job, follows the VM or raises an alert.
		PowerReportsSuppressed.With().Inc()
	}
	for _, o := range outs {
		switch e := o.Value.(type) {
		case *schemas.JobAccepted:
			jobStarted(e.JobRef)
		case *schemas.JobSucceeded:
			jobEnded(e.JobRef, "succeeded")
		case *schemas.JobFailed:
			jobEnded(e.JobRef, "failed")
		case *schemas.JobCancelled:
			jobEnded(e.JobRef, "cancelled")
		case *schemas.JobRejected:
			jobEnded(e.JobRef, "rejected")
		}
	}
}

func jobStarted(j schemas.JobRef) {
	jobs.Lock()
	defer jobs.Unlock()
	if _, ok := jobs.started[j.JobID]; ok {
		return
	}
	jobs.started[j.JobID] = j
	JobsInFlight.With(j.JobType).Add(1)
}

func jobEnded(j schemas.JobRef, result string) {
	jobs.Lock()
	start, ok := jobs.started[j.JobID]
	delete(jobs.started, j.JobID)
	jobs.Unlock()
	if !ok {
		if result == "rejected" {
			JobSeconds.With(j.JobType, result).Observe(0)
		}
		return
	}
	JobsInFlight.With(start.JobType).Add(-1)
	JobSeconds.With(start.JobType, result).Observe(float64(max(j.At-start.At, 0)) / 1000)
}
