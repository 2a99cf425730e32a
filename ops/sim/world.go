package sim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/processors/host"
	"github.com/vmplane/vmplane/processors/lease"
	"github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/processors/vm"
	"github.com/vmplane/vmplane/producers/agent"
	drv "github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// Options shape a run.
type Options struct {
	Seed uint64
	// Family weights the run toward one race (family.go); empty is the
	// mix of everything.
	Family string
	// Steps is how many steps run with faults (default 1200); then the
	// faults stop and the world settles: no job runs, nothing is left to
	// deliver (Settle bounds the steps that may take, default 20000).
	Steps  int
	Settle int
	// Trace, when set, receives every step as it happens.
	Trace io.Writer
}

// Result says what a run did.
type Result struct {
	Seed  uint64
	Steps int
	// Err is the first invariant broken, with the recent history; nil
	// when the run held.
	Err error
	// Checks counts how often each invariant was checked.
	Checks map[string]int
	// Faults counts the faults injected, by kind.
	Faults map[string]int
	// Jobs counts the jobs that ended, by outcome.
	Jobs map[string]int
}

// The simulated settings: the defaults of docs/design.md §13 scaled down,
// so that a few thousand steps cover pings, timeouts and HA.
const (
	pingInterval = 10 * time.Second
	jobTimeout   = 120 * time.Second
	resendAfter  = 10 * time.Second
)

// world is one run: the log, the processors, the hosts and their agents,
// the clients, the clock and the random source.
type world struct {
	opts Options
	prof profile
	rng  *rand.Rand
	now  time.Time
	step int
	// calmSince is when the faults stopped, fenced when a host was last
	// fenced: the host processor needs a few ping rounds after either to
	// see the truth.
	calmSince, fenced time.Time
	log               *memLog
	procs             []proc
	drv               *drv.Driver
	hosts             []agent.HostInfo
	ags               []*simAgent
	cl                *clients
	views             *views
	proj              *projection

	ring []traceLine
	// touched says the hypervisor may have changed since the guests were
	// last checked.
	touched     bool
	err         error
	deadLetters int
	checks      map[string]int
	faults      map[string]int
}

// Run plays one seed and checks the invariants after every step.
func Run(o Options) Result {
	w, err := played(o)
	if err != nil {
		return Result{Seed: o.Seed, Err: err}
	}
	return w.result()
}

// played plays one seed and returns its world, as it ended.
func played(o Options) (*world, error) {
	if o.Steps <= 0 {
		o.Steps = 1200
	}
	if o.Settle <= 0 {
		o.Settle = 20000
	}
	prof, err := profileOf(o.Family)
	if err != nil {
		return nil, err
	}
	w := newWorld(o, prof)
	w.play()
	return w, nil
}

// result says what the world did.
func (w *world) result() Result {
	o := w.opts
	return Result{Seed: o.Seed, Steps: w.step, Err: w.err, Checks: w.checks, Faults: w.faults, Jobs: w.views.outcomes}
}

func newWorld(o Options, prof profile) *world {
	w := &world{opts: o, prof: prof, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed)), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		log: newMemLog(), checks: map[string]int{}, faults: map[string]int{}}
	vc := vm.DefaultConfig()
	vc.JobTimeout, vc.ResendAfter = jobTimeout, resendAfter
	hc := host.DefaultConfig()
	hc.PingInterval, hc.PingTimeout, hc.MissingGrace, hc.RestartGrace, hc.TickSlack, hc.AlertWait = pingInterval, 0, 0, 3*pingInterval, 0, 6*pingInterval
	pc := placement.DefaultConfig()
	pc.HostReservationReleasePeriod = 60 * time.Second
	place := newMachineProc("processor-placement", engine.Machine[*schemas.ZoneRecord](placement.New(pc)), schemas.TopicPlacementState, schemas.TopicPlacementRequests)
	place.watch = leasedClaims
	w.procs = []proc{
		place,
		newMachineProc("processor-lease", engine.Machine[*schemas.LeaseZoneRecord](lease.New(lease.DefaultConfig())), schemas.TopicLeaseState, schemas.TopicLeaseCommands, schemas.TopicPlacementEvents),
		newMachineProc("processor-host", engine.Machine[*schemas.HostRecord](host.New(hc)), schemas.TopicHostState, schemas.TopicHostEvents, schemas.TopicHostCommands),
		newMachineProc("processor-host-relay", engine.Machine[*schemas.HostRecord](host.Relay{}), schemas.TopicHostRelay, schemas.TopicVmEvents),
		newMachineProc("processor-vm", engine.Machine[*schemas.VmRecord](vm.New(vc)), schemas.TopicVmState, schemas.TopicVmCommands, schemas.TopicVmPower, schemas.TopicVmAnswers, schemas.TopicVmSignals),
	}
	for _, p := range w.procs {
		p.restore(w)
	}
	w.proj = newProjection(w)
	w.hosts = layout()
	d, err := drv.New(drv.Config{Hosts: w.hosts, ChangeBuffer: 1 << 16, Clock: func() time.Time { return w.now }})
	if err != nil {
		panic(err)
	}
	w.drv = d
	for i, c := range []string{"c1", "c2"} {
		a := &simAgent{id: fmt.Sprintf("agent-%d", i+1), drv: d, durable: w.rng.IntN(2) == 0, disk: map[string]schemas.Record{}}
		for _, h := range w.hosts {
			if h.Cluster == c {
				a.hosts = append(a.hosts, h)
			}
		}
		a.start(w)
		w.ags = append(w.ags, a)
	}
	w.cl = newClients(w)
	w.views = newViews()
	w.cl.setUpStorage(w)
	return w
}

// layout is the zone: two clusters of three hosts, the second with a
// property leases ask for.
func layout() []agent.HostInfo {
	var out []agent.HostInfo
	for i := 1; i <= 6; i++ {
		c, props := "c1", map[string]string{}
		if i > 3 {
			c, props = "c2", map[string]string{"gpu": "yes"}
		}
		id := fmt.Sprintf("h%d", i)
		out = append(out, agent.HostInfo{ID: id, Name: id, Zone: "z1", Pod: "p1", Cluster: c, Hypervisor: "sim",
			CPU: 8, MemoryMB: 16384, Tags: []string{}, Properties: props})
	}
	return out
}

func (w *world) ms() int64 { return w.now.UnixMilli() }

// produce appends a record produced outside a transaction (an agent, a
// client through the gateway).
func (w *world) produce(r schemas.Record) {
	b, err := schemas.Marshal(r.Value)
	if err != nil {
		w.fail("produce %T: %v", r.Value, err)
		return
	}
	w.log.appendOne(tp{r.Topic, w.log.partitionOf(r.Topic, r.Key)}, entry{key: r.Key, value: b, headers: r.Headers, at: w.ms()})
}

// trace keeps a line of the recent history, and writes it when tracing.
// The line is formatted only when written or shown with a failure: most
// runs show none of it.
func (w *world) trace(format string, args ...any) {
	l := traceLine{step: w.step, now: w.now, format: format, args: args}
	if w.opts.Trace != nil {
		fmt.Fprintln(w.opts.Trace, l)
	}
	w.ring = append(w.ring, l)
	if len(w.ring) > 400 {
		w.ring = append(w.ring[:0], w.ring[len(w.ring)-300:]...)
	}
}

// traceLine is one line of the history.
type traceLine struct {
	step   int
	now    time.Time
	format string
	args   []any
}

func (l traceLine) String() string {
	return fmt.Sprintf("%6d %s ", l.step, l.now.Format("15:04:05.000")) + fmt.Sprintf(l.format, l.args...)
}

func familyNote(f string) string {
	if f == "" {
		return ""
	}
	return " (family " + f + ")"
}

// detail writes a record in full when tracing.
func (w *world) detail(what string, v any) {
	if w.opts.Trace != nil {
		fmt.Fprintf(w.opts.Trace, "         %s %T %+v\n", what, v, v)
	}
}

// fail records the first broken invariant with the history that led to it.
func (w *world) fail(format string, args ...any) {
	if w.err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	replay := fmt.Sprintf("-seed %d", w.opts.Seed)
	if w.opts.Family != "" {
		replay += " -family " + w.opts.Family
	}
	w.err = fmt.Errorf("seed %d%s, step %d (%s): %s\nreplay: go test ./ops/sim -run 'TestSeed$' %s -v\nrecent history:\n%s",
		w.opts.Seed, familyNote(w.opts.Family), w.step, w.now.Format(time.RFC3339Nano), msg, replay, history(w.ring))
}

// typeName prints a record's name, when shown.
type typeName struct{ v any }

func (t typeName) String() string { return schemas.TypeName(t.v) }

func history(ring []traceLine) string {
	lines := make([]string, len(ring))
	for i, l := range ring {
		lines[i] = l.String()
	}
	return strings.Join(lines, "\n")
}

// summary prints a machine's outputs in a few words, when shown.
type summary []schemas.Record

func (outs summary) String() string {
	if len(outs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(outs))
	for _, o := range outs {
		parts = append(parts, schemas.TypeName(o.Value)+"("+o.Key+")")
	}
	return strings.Join(parts, " ")
}
