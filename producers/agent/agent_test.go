package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// stack is a kfake broker with the topic table, a running agent over a sim
// driver, and a watcher of everything the agent writes.
type stack struct {
	t     *testing.T
	drv   *sim.Driver
	cfg   agent.Config
	agent *agent.Agent
	cl    *kgo.Client
	codec *schemas.Codec
	start time.Time

	mu       sync.Mutex
	seen     []schemas.Record
	raw      []*kgo.Record
	done     chan error
	stopOnce sync.Once
}

// testHosts are the sim hosts of every stack.
var testHosts = []agent.HostInfo{
	{ID: "h1", Name: "host one", Zone: "z1", Pod: "p1", Cluster: "c1", Hypervisor: "sim", CPU: 16, MemoryMB: 32768,
		Tags: []string{"ssd"}, Properties: map[string]string{"rack": "r1"}},
	{ID: "h2", Name: "host two", Zone: "z1", Pod: "p1", Cluster: "c1", Hypervisor: "sim", CPU: 8, MemoryMB: 16384},
}

// simLatency is how long the sim driver's operations take in the stacks
// newStack makes (zero: at once); a test that needs slow hosts sets it
// and does not run in parallel.
var simLatency sim.Durations

func newStack(t *testing.T, ping time.Duration, prepare func(*sim.Driver), tweak ...func(*agent.Config)) *stack {
	t.Helper()
	return newStackOn(t, startBroker(t).Addrs(), ping, prepare, tweak...)
}

// startBroker starts an embedded broker for t, or skips t in -short.
func startBroker(t *testing.T) *kafka.Broker {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the kfake broker")
	}
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// newStackOn starts the stack on a running broker; tweak, when given,
// changes the agent's configuration.
func newStackOn(t *testing.T, addrs []string, ping time.Duration, prepare func(*sim.Driver), tweak ...func(*agent.Config)) *stack {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.ConsumeTopics(schemas.TopicHostEvents, schemas.TopicVmPower, schemas.TopicVmAnswers, schemas.TopicDLQ),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := (kafka.Config{}).EnsureTopics(t.Context(), cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	drv, err := sim.New(sim.Config{Hosts: testHosts, Latency: simLatency})
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(drv)
	}
	s := &stack{t: t, drv: drv, cl: cl, codec: schemas.NewCodec(nil), start: time.Now(), done: make(chan error, 1)}
	go s.watch(t.Context())
	s.cfg = agent.Config{ID: "a1", Kafka: kafka.Config{Brokers: addrs}, PingInterval: ping, Workers: 4,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, f := range tweak {
		f(&s.cfg)
	}
	s.agent = agent.New(s.cfg, drv)
	go func() { s.done <- s.agent.Run(t.Context()) }()
	t.Cleanup(s.stop)
	return s
}

// restart stops the agent and runs a new one, with the same configuration,
// over drv, as a restarted agent process does; before it starts, between
// runs, runs in the meantime.
func (s *stack) restart(drv agent.Driver, between func()) {
	s.t.Helper()
	s.stop()
	if between != nil {
		between()
	}
	s.stopOnce = sync.Once{}
	s.done = make(chan error, 1)
	s.agent = agent.New(s.cfg, drv)
	go func() { s.done <- s.agent.Run(s.t.Context()) }()
}

func (s *stack) stop() {
	s.stopOnce.Do(func() {
		t0 := time.Now()
		s.agent.Stop()
		select {
		case err := <-s.done:
			if err != nil {
				s.t.Errorf("agent run: %v", err)
			}
		case <-time.After(15 * time.Second):
			s.t.Error("agent did not stop")
		}
		if d := time.Since(t0); d > 3*time.Second {
			s.t.Errorf("agent took %v to stop", d)
		}
	})
}

func (s *stack) watch(ctx context.Context) {
	for ctx.Err() == nil {
		fs := s.cl.PollFetches(ctx)
		fs.EachRecord(func(kr *kgo.Record) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if kr.Topic == schemas.TopicDLQ {
				s.raw = append(s.raw, kr)
				return
			}
			r, err := kafka.FromKafka(ctx, s.codec, kr)
			if err != nil {
				s.t.Errorf("agent wrote an undecodable record: %v", err)
				return
			}
			s.seen = append(s.seen, r)
		})
	}
}

// records returns the values of type T seen so far that match keep.
func records[T any](s *stack, keep func(*T) bool) []*T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*T
	for _, r := range s.seen {
		if v, ok := r.Value.(*T); ok && (keep == nil || keep(v)) {
			out = append(out, v)
		}
	}
	return out
}

// waitFor waits until at least n values of type T match keep.
func waitFor[T any](s *stack, n int, keep func(*T) bool) []*T {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := records(s, keep)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			var zero T
			s.t.Fatalf("saw %d %T, want %d", len(got), zero, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *stack) send(v any, key string) {
	s.t.Helper()
	kr, err := kafka.ToKafka(s.t.Context(), s.codec, schemas.Record{Topic: schemas.TopicAgentCommands, Key: key, Value: v})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cl.ProduceSync(s.t.Context(), kr).FirstErr(); err != nil {
		s.t.Fatal(err)
	}
}

func cmd(id, host, vm string, epoch int64) schemas.AgentCommand {
	return schemas.AgentCommand{CommandID: id, HostID: host, VmID: vm, Epoch: epoch, JobID: "job-" + id, IssuedAt: time.Now().UnixMilli()}
}

func answerTo(id string) func(*schemas.AgentAnswer) bool {
	return func(a *schemas.AgentAnswer) bool { return a.CommandID == id }
}

func reportOf(vm, state string) func(*schemas.PowerReport) bool {
	return func(r *schemas.PowerReport) bool { return r.VmID == vm && r.PowerState == state }
}

func TestConnectAndRounds(t *testing.T) {
	s := newStack(t, 150*time.Millisecond, func(d *sim.Driver) {
		if err := d.Start(t.Context(), "h1", agent.VMSpec{ID: "old", CPU: 1, MemoryMB: 512}); err != nil {
			t.Fatal(err)
		}
	})
	conns := waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	byHost := map[string]*schemas.AgentConnected{}
	for _, c := range conns {
		byHost[c.HostID] = c
	}
	h1 := byHost["h1"]
	if h1 == nil || byHost["h2"] == nil {
		t.Fatalf("connected hosts %v", byHost)
	}
	if h1.AgentID != "a1" || h1.ZoneID != "z1" || h1.PodID != "p1" || h1.ClusterID != "c1" || h1.CPU != 16 ||
		h1.MemoryMB != 32768 || h1.Hypervisor != "sim" || h1.Name != "host one" ||
		!slices.Equal(h1.Tags, []string{"ssd"}) || h1.Properties["rack"] != "r1" || !slices.Equal(h1.VmIDs, []string{"old"}) {
		t.Fatalf("AgentConnected %+v", h1)
	}

	pings := waitFor(s, 3, func(p *schemas.AgentPing) bool { return p.HostID == "h1" })
	base := s.start.UnixMilli() * 1000
	for i, p := range pings {
		if p.ReportSeq <= base {
			t.Fatalf("ping seq %d not above the clock base %d", p.ReportSeq, base)
		}
		if i > 0 && p.ReportSeq <= pings[i-1].ReportSeq {
			t.Fatalf("ping seqs not increasing: %d then %d", pings[i-1].ReportSeq, p.ReportSeq)
		}
		if !slices.Equal(p.VmIDs, []string{"old"}) {
			t.Fatalf("ping vm ids %v", p.VmIDs)
		}
	}
	// Each round's report carries the seq of the ping that closes it.
	reports := records(s, func(r *schemas.PowerReport) bool { return r.VmID == "old" })
	for _, p := range pings {
		if !slices.ContainsFunc(reports, func(r *schemas.PowerReport) bool {
			return r.ReportSeq == p.ReportSeq && r.PowerState == schemas.PowerOn && r.HostID == "h1"
		}) {
			t.Fatalf("no PowerReport with the seq %d of a ping", p.ReportSeq)
		}
	}

	s.stop()
	waitFor(s, 2, func(*schemas.AgentDisconnected) bool { return true })
}

func TestStartStopDestroy(t *testing.T) {
	s := newStack(t, time.Hour, nil)
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	s.send(&schemas.StartVm{AgentCommand: cmd("c1", "h1", "v1", 7), Name: "web", CPU: 2, MemoryMB: 1024}, "h1")
	a := waitFor(s, 1, answerTo("c1"))[0]
	if !a.OK || a.Epoch != 7 || a.CommandType != "StartVm" || a.PowerState != schemas.PowerOn || a.HostID != "h1" || a.VmID != "v1" || a.Error != "" {
		t.Fatalf("answer %+v", a)
	}
	waitFor(s, 1, reportOf("v1", schemas.PowerOn))
	// The host's VM list follows at once, long before the next round (1 h).
	waitFor(s, 1, func(p *schemas.AgentPing) bool { return p.HostID == "h1" && slices.Contains(p.VmIDs, "v1") })
	if st, _ := s.drv.PowerStates("h1"); st["v1"] != schemas.PowerOn {
		t.Fatalf("driver says %v", st)
	}

	s.send(&schemas.StopVm{AgentCommand: cmd("c2", "h1", "v1", 8), Force: true}, "h1")
	if a := waitFor(s, 1, answerTo("c2"))[0]; !a.OK || a.PowerState != schemas.PowerOff || a.Epoch != 8 {
		t.Fatalf("stop answer %+v", a)
	}
	off := waitFor(s, 1, reportOf("v1", schemas.PowerOff))[0]
	on := records(s, reportOf("v1", schemas.PowerOn))[0]
	if off.ReportSeq <= on.ReportSeq {
		t.Fatalf("stop report seq %d not after start report seq %d", off.ReportSeq, on.ReportSeq)
	}

	s.send(&schemas.DestroyVm{AgentCommand: cmd("c3", "h1", "v1", 9)}, "h1")
	s.send(&schemas.DestroyVm{AgentCommand: cmd("c4", "h1", "v1", 9)}, "h1")
	for _, id := range []string{"c3", "c4"} {
		if a := waitFor(s, 1, answerTo(id))[0]; !a.OK || a.CommandType != "DestroyVm" {
			t.Fatalf("destroy answer %+v (destroying a gone VM succeeds)", a)
		}
	}
	// A failing command is answered with the driver's error.
	s.send(&schemas.StopVm{AgentCommand: cmd("c5", "h1", "ghost", 1)}, "h1")
	if a := waitFor(s, 1, answerTo("c5"))[0]; a.OK || a.Error == "" {
		t.Fatalf("stop of an unknown vm answered %+v", a)
	}
}

func TestRepeatedCommandRunsOnce(t *testing.T) {
	s := newStack(t, time.Hour, nil)
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	start := &schemas.StartVm{AgentCommand: cmd("c1", "h2", "v1", 3), CPU: 1, MemoryMB: 256}
	s.send(start, "h2")
	waitFor(s, 1, answerTo("c1"))
	// Power the VM off behind the agent's back: executing c1 again would
	// power it on.
	if err := s.drv.OutOfBand("h2", "v1", schemas.PowerOff); err != nil {
		t.Fatal(err)
	}
	s.send(start, "h2")
	answers := waitFor(s, 2, answerTo("c1"))
	if *answers[0] != *answers[1] {
		t.Fatalf("answers differ: %+v vs %+v", answers[0], answers[1])
	}
	// A later command on the same VM proves the repeat was handled.
	s.send(&schemas.RebootVm{AgentCommand: cmd("c2", "h2", "v1", 3)}, "h2")
	waitFor(s, 1, answerTo("c2"))
	if st, _ := s.drv.PowerStates("h2"); st["v1"] != schemas.PowerOff {
		t.Fatalf("c1 ran again: v1 is %s", st["v1"])
	}
}

func TestOutOfBandReportedAtOnce(t *testing.T) {
	s := newStack(t, time.Hour, func(d *sim.Driver) {
		if err := d.Start(t.Context(), "h1", agent.VMSpec{ID: "v1"}); err != nil {
			t.Fatal(err)
		}
	})
	first := waitFor(s, 1, reportOf("v1", schemas.PowerOn))[0]
	if err := s.drv.OutOfBand("h1", "v1", schemas.PowerPaused); err != nil {
		t.Fatal(err)
	}
	paused := waitFor(s, 1, reportOf("v1", schemas.PowerPaused))[0]
	if paused.ReportSeq <= first.ReportSeq || paused.HostID != "h1" {
		t.Fatalf("out-of-band report %+v after %+v", paused, first)
	}
}

// TestGarbageIsSkipped: an agent writes no dead letters (only processors
// and projectors may write dlq.v1): a record it cannot decode is counted
// and skipped, and the commands after it are carried out.
func TestGarbageIsSkipped(t *testing.T) {
	s := newStack(t, time.Hour, nil)
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	skipped := telemetry.AgentCommands.With("undecodable", "skipped")
	before := skipped.Value()
	if err := s.cl.ProduceSync(t.Context(), &kgo.Record{Topic: schemas.TopicAgentCommands, Key: []byte("h1"), Value: []byte("not avro")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A command for a host of another agent is skipped without an answer.
	s.send(&schemas.StartVm{AgentCommand: cmd("foreign", "elsewhere", "vx", 1)}, "h1")
	s.send(&schemas.StartVm{AgentCommand: cmd("c1", "h1", "v1", 1)}, "h1")
	if a := waitFor(s, 1, answerTo("c1"))[0]; !a.OK {
		t.Fatalf("answer %+v", a)
	}
	if got := records(s, answerTo("foreign")); len(got) != 0 {
		t.Fatalf("answered a foreign host's command: %+v", got[0])
	}
	// The garbage came before c1 in the same partition: it was read.
	if d := skipped.Value() - before; d != 1 {
		t.Fatalf("%v records counted as skipped, want 1", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.raw) != 0 {
		t.Fatalf("the agent wrote %d records to dlq.v1", len(s.raw))
	}
}

func TestSilentHosts(t *testing.T) {
	s := newStack(t, 100*time.Millisecond, nil)
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	s.send(&schemas.AgentRejected{AgentCommand: cmd("r1", "h2", "", 0), Reason: "removed"}, "h2")
	if err := s.drv.CrashHost("h1"); err != nil {
		t.Fatal(err)
	}
	// Let the rejection and the crash land, then count pings over a few
	// rounds: neither host may ping.
	time.Sleep(400 * time.Millisecond)
	ping := func(h string) func(*schemas.AgentPing) bool {
		return func(p *schemas.AgentPing) bool { return p.HostID == h }
	}
	n1, n2 := len(records(s, ping("h1"))), len(records(s, ping("h2")))
	time.Sleep(400 * time.Millisecond)
	if m1, m2 := len(records(s, ping("h1"))), len(records(s, ping("h2"))); m1 != n1 || m2 != n2 {
		t.Fatalf("pings went on: h1 %d→%d, h2 %d→%d", n1, m1, n2, m2)
	}
	// A recovered host is announced again and pings again; a rejected one
	// stays silent.
	if err := s.drv.RecoverHost("h1"); err != nil {
		t.Fatal(err)
	}
	waitFor(s, 2, func(c *schemas.AgentConnected) bool { return c.HostID == "h1" })
	waitFor(s, n1+2, ping("h1"))
	if m2 := len(records(s, ping("h2"))); m2 != n2 {
		t.Fatalf("rejected host pinged again: %d→%d", n2, m2)
	}
	s.stop()
	time.Sleep(100 * time.Millisecond)
	if d := records(s, func(d *schemas.AgentDisconnected) bool { return d.HostID == "h2" }); len(d) != 0 {
		t.Fatal("rejected host sent AgentDisconnected")
	}
	waitFor(s, 1, func(d *schemas.AgentDisconnected) bool { return d.HostID == "h1" })
}

func TestRunWithoutHosts(t *testing.T) {
	if err := agent.New(agent.Config{ID: "a"}, emptyDriver{}).Run(t.Context()); err == nil {
		t.Fatal("an agent without hosts ran")
	}
}

// emptyDriver serves no host; the lifecycle methods of the embedded nil
// Driver are never reached.
type emptyDriver struct{ agent.Driver }

func (emptyDriver) Hosts() []agent.HostInfo                           { return nil }
func (emptyDriver) Start(context.Context, string, agent.VMSpec) error { return errors.ErrUnsupported }
func (emptyDriver) Stop(context.Context, string, string, bool) error  { return errors.ErrUnsupported }
func (emptyDriver) Destroy(context.Context, string, string, []schemas.Volume) error {
	return errors.ErrUnsupported
}
func (emptyDriver) PowerStates(string) (map[string]string, error) { return nil, agent.ErrUnknownHost }
func (emptyDriver) Changes() <-chan agent.Change                  { return nil }

func TestReannounceAfterBrokerOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the kfake broker")
	}
	dir := t.TempDir()
	b, err := kafka.StartBroker("127.0.0.1:0", dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := b.Addrs()[0]
	s := newStackOn(t, []string{addr}, time.Hour, nil)
	waitFor(s, 1, func(c *schemas.AgentConnected) bool { return c.HostID == "h1" })
	b.Close()
	time.Sleep(1500 * time.Millisecond)
	b, err = kafka.StartBroker(addr, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// With an hour between rounds, only the broker's return can announce
	// the hosts again.
	waitFor(s, 2, func(c *schemas.AgentConnected) bool { return c.HostID == "h1" })
	s.send(&schemas.StartVm{AgentCommand: cmd("c1", "h1", "v1", 1)}, "h1")
	if a := waitFor(s, 1, answerTo("c1"))[0]; !a.OK {
		t.Fatalf("answer after the outage %+v", a)
	}
	s.stop()
}
