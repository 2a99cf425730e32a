package sim

import (
	"maps"
	"slices"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// event is one thing that may happen next, with its weight.
type event struct {
	weight int
	name   string // what it is, for a reader of the event lists
	do     func()
}

// play runs the faulty steps, then lets the world settle.
func (w *world) play() {
	for ; w.step < w.opts.Steps && w.err == nil; w.step++ {
		w.next(w.events(true))
		w.check()
	}
	if w.err == nil {
		w.settle()
	}
}

// settle stops the faults: every process runs again, every host is back
// and reachable, and the world runs without faults until no job runs and
// nothing is left to deliver.
func (w *world) settle() {
	w.calmSince = w.now
	w.trace("faults stop")
	if w.proj.matchesRebuild(w); w.err != nil {
		return
	}
	for _, p := range w.procs {
		if !p.up() {
			p.restore(w)
		}
	}
	for _, a := range w.ags {
		if !a.running {
			a.start(w)
		}
	}
	for _, h := range w.hosts {
		_ = w.drv.RecoverHost(h.ID)
		_ = w.drv.Heal(h.ID)
	}
	w.touched = true
	// The world settles once no job runs and nothing is left to deliver,
	// and every host has had a few ping rounds. Jobs queued during the
	// faults run one after another, each within its own time limit.
	for n := 0; w.err == nil; n++ {
		// A fencing sent before the faults stopped may power a host off
		// after, even one that reconnected meanwhile (its Down answer
		// then no longer counts): the host processor sees it by the
		// missing pings, after its restart grace, the ping timeout and
		// an investigation.
		rounds := w.calmSince.Add(6 * pingInterval)
		if f := w.fenced.Add(12 * pingInterval); f.After(rounds) {
			rounds = f
		}
		if !w.now.Before(rounds) && !w.busy() && !w.jobsRunning() {
			break
		}
		if n == w.opts.Settle {
			w.fail("the world did not settle in %d steps after the faults stopped", n)
			return
		}
		w.next(w.events(false))
		w.check()
		w.jobsInTime()
		w.step++
	}
	if w.err == nil {
		w.settled()
	}
	if w.err == nil {
		w.proj.matchesRebuild(w)
	}
}

// jobLimit is how long a job may run once the faults stop: the job
// timeout, the cleanup of a start that was never answered (3 × resend,
// processors/vm/cleanup.go), and the slack of a timer that fires at the
// next batch rather than on the dot.
const jobLimit = jobTimeout + 3*resendAfter + 30*time.Second

// jobsRunning says whether a VM has a job in flight, as committed.
func (w *world) jobsRunning() bool {
	for _, v := range w.views.vms {
		if v.Job != nil {
			return true
		}
	}
	return false
}

// jobsInTime holds the liveness of jobs once the faults have stopped: none
// runs longer than its time limit after the faults stopped.
func (w *world) jobsInTime() {
	for _, id := range slices.Sorted(maps.Keys(w.views.vms)) {
		j := w.views.vms[id].Job
		if j == nil || j.StartedAt == 0 {
			continue
		}
		w.checks["every job ends in time"]++
		// Counted from when the faults stopped: before, a crashed
		// processor or a jump of the clock may hold any job up.
		since := time.UnixMilli(j.StartedAt)
		if since.Before(w.calmSince) {
			since = w.calmSince
		}
		if ran := w.now.Sub(since); ran > jobLimit {
			w.fail("VM %s's job %s (%s, phase %s) has run %s since the faults stopped, past its limit of %s", id, j.JobID, j.JobType, j.Phase, ran, jobLimit)
			return
		}
	}
}

// busy says whether anything is left to deliver or run now.
func (w *world) busy() bool {
	for _, p := range w.procs {
		if p.pending(w) {
			return true
		}
	}
	for _, a := range w.ags {
		if len(a.pendingOut()) > 0 {
			return true
		}
	}
	return false
}

// next picks one event by weight and runs it, then hands the hypervisor's
// own power changes to the agents.
func (w *world) next(evs []event) {
	if w.overdueRound() {
		return
	}
	weights := make([]int, len(evs))
	total := 0
	for i, e := range evs {
		weights[i] = e.weight
		total += e.weight
	}
	if total == 0 {
		return
	}
	evs[w.pick(weights...)].do()
	w.drainChanges()
}

// roundSlack is how late a running agent's report round may be before it
// runs ahead of any other event: an agent pings on a timer, and a host
// whose agent runs is never taken for disconnected because the random
// choice of events passed its round over for long (found by seed 23629:
// no round for 30 s, and the host went Disconnected while up).
const roundSlack = 2 * time.Second

// overdueRound runs the report round of the first running agent whose
// round is overdue by more than roundSlack, and says whether it did.
func (w *world) overdueRound() bool {
	for _, a := range w.ags {
		if a.running && w.ms() >= a.nextRound+roundSlack.Milliseconds() {
			a.round(w)
			w.drainChanges()
			return true
		}
	}
	return false
}

func (w *world) drainChanges() {
	for {
		select {
		case c := <-w.drv.Changes():
			for _, a := range w.ags {
				if _, ok := a.serves(c.HostID); ok && a.running {
					a.changes(w, []agent.Change{c})
				}
			}
		default:
			return
		}
	}
}

// events lists what may happen now; faults only while faulty.
func (w *world) events(faulty bool) []event {
	evs := []event{{10, "clock", func() { w.advance(time.Duration(w.rng.IntN(1500)) * time.Millisecond) }}}
	for _, p := range w.procs {
		if p.pending(w) {
			evs = append(evs, event{8, "batch", func() {
				abort := faulty && w.rng.IntN(30) == 0
				if abort {
					w.faults["transaction aborts"]++
				}
				p.batch(w, 1+w.rng.IntN(8), abort)
			}})
		}
	}
	for _, a := range w.ags {
		if !a.running {
			if faulty {
				evs = append(evs, event{2, "agent restart", func() { w.trace("%s starts", a.id); a.start(w) }})
			}
			continue
		}
		evs = append(evs, event{6, "agent poll", func() { a.poll(w, 1+w.rng.IntN(8)) }})
		if out := a.pendingOut(); len(out) > 0 {
			evs = append(evs, event{12, "agent delivers", func() {
				// A producer sends a partition's records in batches: the
				// head of one partition's queue, of a random length, goes
				// out (the first record twice, at times). One record per
				// event fell behind an agent of many VMs, whose rounds
				// then kept its outbox from ever emptying.
				at := out[w.rng.IntN(len(out))]
				dup := faulty && w.rng.IntN(25) == 0
				if dup {
					w.faults["agent record duplicated"]++
				}
				for n := 1 + w.rng.IntN(len(a.outbox[at])); n > 0; n-- {
					a.deliver(w, at, dup)
					dup = false
				}
			}})
		}
		evs = append(evs, event{2, "agent commits", func() { a.commit(w) }})
		if w.ms() >= a.nextRound {
			evs = append(evs, event{6, "agent round", func() { a.round(w) }})
		}
	}
	if !faulty {
		return evs
	}
	evs = append(evs, event{6, "client", func() { w.cl.act(w) }})
	return append(evs, w.faultEvents()...)
}

// advance moves the clock forward.
func (w *world) advance(d time.Duration) { w.now = w.now.Add(d) }

// faultEvents are the faults the seed may choose this step.
func (w *world) faultEvents() []event {
	evs := []event{
		{w.prof.clockJump, "clock jump", func() {
			d := time.Duration(30+w.rng.IntN(600)) * time.Second
			w.faults["clock jumps"]++
			w.trace("clock jumps %s", d)
			w.advance(d)
		}},
		{w.prof.procCrash, "processor crash", func() {
			p := w.procs[w.rng.IntN(len(w.procs))]
			if p.up() {
				w.faults["processor crashes"]++
				w.trace("%s crashes", p.name())
				p.crash()
			}
		}},
		{w.prof.agentCrash, "agent crash", func() {
			a := w.ags[w.rng.IntN(len(w.ags))]
			if a.running {
				w.faults["agent crashes"]++
				w.trace("%s crashes (answers kept: %v)", a.id, a.durable)
				a.crash()
			}
		}},
		{w.prof.agentStop, "agent stop", func() {
			a := w.ags[w.rng.IntN(len(w.ags))]
			if a.running && w.rng.IntN(2) == 0 {
				w.faults["agent stops"]++
				w.trace("%s stops", a.id)
				a.stop(w)
			}
		}},
		{w.prof.hostFault, "host fault", func() { w.hostFault() }},
		{w.prof.outOfBand, "out of band", func() { w.outOfBand() }},
	}
	for _, p := range w.procs {
		if !p.up() {
			evs = append(evs, event{3, "processor restart", func() { w.trace("%s restarts", p.name()); p.restore(w) }})
		}
	}
	return evs
}

// hostFault crashes, partitions, recovers or heals a host at random; a host
// that flaps gets several in a row.
func (w *world) hostFault() {
	w.touched = true
	h := w.hosts[w.rng.IntN(len(w.hosts))].ID
	var err error
	kind := ""
	switch w.pick(w.prof.hostKinds[:]...) {
	case 0:
		kind, err = "host crashes", w.drv.CrashHost(h)
	case 1:
		kind, err = "host partitioned", w.drv.Partition(h)
	case 2:
		kind, err = "host recovers", w.drv.RecoverHost(h)
	default:
		kind, err = "host heals", w.drv.Heal(h)
	}
	if err != nil {
		w.fail("%s %s: %v", kind, h, err)
		return
	}
	w.faults[kind]++
	w.trace("%s: %s", h, kind)
}

// outOfBand changes a guest's power behind the control plane's back: a
// guest shutting down, an operator pausing or unpausing it.
func (w *world) outOfBand() {
	h := w.hosts[w.rng.IntN(len(w.hosts))].ID
	g, err := w.drv.PowerStates(h) // a host that is down runs nothing
	if err != nil || len(g) == 0 {
		return
	}
	ids := agent.SortedIDs(g)
	vm := ids[w.rng.IntN(len(ids))]
	state := []string{schemas.PowerOff, schemas.PowerPaused, schemas.PowerOn}[w.rng.IntN(3)]
	if cur := g[vm]; cur != schemas.PowerOn && cur != schemas.PowerPaused || state == schemas.PowerOn && cur != schemas.PowerPaused {
		// Bringing a guest that is off back by hand starts a copy the
		// control plane may be starting elsewhere: no system can keep
		// one guest per VM against that. The world only stops, pauses
		// and unpauses running guests.
		return
	}
	w.touched = true
	if err := w.drv.OutOfBand(h, vm, state); err == nil {
		w.faults["out-of-band power changes"]++
		w.trace("%s on %s goes %s out of band", vm, h, state)
	}
}
