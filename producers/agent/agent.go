// Package agent is the hypervisor agent: it announces the hosts a Driver
// serves (AgentConnected), reports raw VM power states every ping interval
// and at once on every change (vm.power.v1, AgentPing), and executes agent
// commands from agent.commands.v1 idempotently, answering each on
// vm.answers.v1 with the epoch it carried. Its only state of its own is the
// answers it gave, by command id, kept in a file of its data directory when
// it has one so that a restart executes nothing twice. It knows nothing of
// jobs, VM states or placement: it reports what the hypervisor says and does
// what it is told, never deciding anything on its own.
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// Config configures an agent.
type Config struct {
	// ID names the agent process; its consumer group is vmplane-agent-<ID>.
	ID    string
	Kafka kafka.Config
	// PingInterval is the report round period (default 60 s, ping.interval).
	PingInterval time.Duration
	Logger       *slog.Logger
	// Clock gives the wall time of `at` fields and of the report sequence
	// base (default time.Now).
	Clock func() time.Time
	// Workers bounds how many VMs have commands executing at once (default 16).
	Workers int
	// AnswerCache is how many recent answers per host are kept to answer a
	// repeated command id without executing it again (default 256).
	AnswerCache int
	// DataDir keeps those answers across restarts (answers-<ID>.log,
	// answerlog.go): each is fsynced before it is sent, so a command
	// delivered again after a kill is answered, not executed twice. Empty:
	// memory only, and a restarted agent relies on the driver's idempotence
	// alone.
	DataDir string
	// ShutdownGrace bounds how long commands in flight may still finish, and
	// AgentDisconnected be sent, after Run's context ends (default 10 s).
	ShutdownGrace time.Duration
}

func (c *Config) defaults() {
	if c.PingInterval <= 0 {
		c.PingInterval = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.AnswerCache <= 0 {
		c.AnswerCache = 256
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
}

// hostState is what the agent keeps per host it serves.
type hostState struct {
	info HostInfo
	seq  atomic.Int64
	// connected is false until AgentConnected went out for the host since
	// the agent (re)connected or the host became reachable again; reports
	// wait for it.
	connected atomic.Bool
	// rejected is set by AgentRejected: the host is then silent until the
	// agent restarts.
	rejected atomic.Bool
	answers  answerCache
}

// nextSeq returns the host's next report sequence. It is taken before the
// driver is read, so a report never carries a state older than one with a
// smaller sequence.
func (h *hostState) nextSeq() int64 { return h.seq.Add(1) }

// Agent serves the hosts of one Driver.
type Agent struct {
	cfg   Config
	drv   Driver
	log   *slog.Logger
	hosts map[string]*hostState
	order []string

	codec *schemas.Codec
	cl    *kgo.Client
	// aborts are the live migrations in flight, for AbortMigrateVm.
	aborts aborts
	// brokerLost is set when a broker dial fails; the next successful dial
	// sends AgentConnected again for every host.
	brokerLost atomic.Bool
	reconnect  chan struct{}

	// answers is the answers file, nil without a data directory; set by
	// Run before any command is consumed.
	answers *answerLog

	mu       sync.Mutex
	cancel   context.CancelFunc
	stopped  bool
	done     chan struct{}
	doneOnce sync.Once
}

// New returns an agent for the driver's hosts; Run starts it.
func New(cfg Config, driver Driver) *Agent {
	cfg.defaults()
	telemetry.PrepareAgent()
	a := &Agent{
		cfg:       cfg,
		drv:       driver,
		log:       cfg.Logger.With("agent", cfg.ID),
		hosts:     map[string]*hostState{},
		reconnect: make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	base := cfg.Clock().UnixMilli() * 1000
	for _, h := range driver.Hosts() {
		hs := &hostState{info: h}
		hs.seq.Store(base)
		hs.answers.limit = cfg.AnswerCache
		a.hosts[h.ID] = hs
		a.order = append(a.order, h.ID)
	}
	return a
}

// Group is the agent's consumer group on agent.commands.v1.
func (a *Agent) Group() string { return a.cfg.Kafka.Group("vmplane-agent-" + a.cfg.ID) }

// Run connects, reports and executes commands until ctx ends or Stop is
// called; then it sends AgentDisconnected for its hosts and returns nil.
// Broker outages are waited out, never returned.
func (a *Agent) Run(ctx context.Context) error {
	// A supervisor may run a failed agent again: done closes once.
	defer a.doneOnce.Do(func() { close(a.done) })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.cancel = cancel
	a.mu.Unlock()
	if len(a.hosts) == 0 {
		return errors.New("agent: the driver serves no hosts")
	}

	codec, err := a.cfg.Kafka.Codec()
	if err != nil {
		return fmt.Errorf("agent %s: %w", a.cfg.ID, err)
	}
	a.codec = codec
	if a.cfg.DataDir != "" {
		// Before the first poll: a command delivered again must find its
		// answer.
		l, err := a.openAnswers(ctx)
		if err != nil {
			return fmt.Errorf("agent %s: %w", a.cfg.ID, err)
		}
		a.answers = l
		defer l.close()
	}
	start := a.cfg.Clock()
	cl, err := kgo.NewClient(a.cfg.Kafka.Opts(
		kgo.ClientID(a.Group()),
		kgo.ConsumerGroup(a.Group()),
		// A static member: an agent restarted after a crash takes its
		// partitions back at once instead of waiting for the dead
		// member's session to time out.
		kgo.InstanceID(a.Group()),
		kgo.ConsumeTopics(a.cfg.Kafka.Topic(schemas.TopicAgentCommands)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Offsets of answered commands are marked and committed every
		// second, on revocation and on Close, never on the command's path:
		// a command delivered again after a crash is answered again from
		// the agent's memory, or from its answers file after a restart
		// (each answer is on disk before it is sent, so before its offset
		// can be marked), and the VM processor ignores an answer it
		// already has.
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(time.Second),
		kgo.BlockRebalanceOnPoll(),
		// A new agent starts at its own start: older commands were meant
		// for an earlier incarnation whose jobs have timed out. A restarted
		// agent resumes from its committed offsets.
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(start.Add(-a.cfg.PingInterval).UnixMilli())),
		kgo.RetryBackoffFn(backoff),
		// A command waits at most this long in a broker that misses a
		// fetch wake-up (kfake, the dev broker, sometimes does); one idle
		// fetch a second per agent costs nothing.
		kgo.FetchMaxWait(time.Second),
		// Answers are produced without waiting (produceThen), on their
		// job's path: sent at once, they batch by themselves while a
		// request is in flight. ProduceSync never lingered anyway.
		kgo.ProducerLinger(0),
		kgo.WithHooks(connWatch{a}),
	)...)
	if err != nil {
		return fmt.Errorf("agent %s: kafka client: %w", a.cfg.ID, err)
	}
	a.cl = cl

	// hard outlives ctx by the shutdown grace so that commands in flight can
	// finish, be answered and committed.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	loops := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-time.After(a.cfg.ShutdownGrace):
				hardCancel()
			case <-loops:
			}
		case <-loops:
		}
	}()

	a.log.Info("agent starting", "hosts", len(a.hosts), "ping_interval", a.cfg.PingInterval)
	pool := newPool(hard, a.cfg.Workers)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); a.reportLoop(ctx) }()
	go func() { defer wg.Done(); a.changeLoop(ctx) }()
	go func() { defer wg.Done(); a.commandLoop(ctx, hard, pool) }()
	wg.Wait()
	pool.close()
	a.answers.close()
	close(loops)

	a.disconnect(hard)
	cl.AllowRebalance()
	cl.Close()
	a.log.Info("agent stopped")
	return nil
}

// Stop ends Run and waits for it to return.
func (a *Agent) Stop() {
	a.mu.Lock()
	a.stopped = true
	cancel := a.cancel
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		<-a.done
	}
}

// disconnect says goodbye for every host that was announced, best effort.
func (a *Agent) disconnect(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ShutdownGrace)
	defer cancel()
	at := a.cfg.Clock().UnixMilli()
	var recs []schemas.Record
	for _, id := range a.order {
		h := a.hosts[id]
		if h.rejected.Load() || !h.connected.Load() {
			continue
		}
		recs = append(recs, schemas.Record{Topic: schemas.TopicHostEvents, Key: id,
			Value: &schemas.AgentDisconnected{HostID: id, Reason: "agent " + a.cfg.ID + " stopping", At: at}})
	}
	if err := a.produce(ctx, recs...); err != nil {
		a.log.Warn("agent disconnect not sent", "err", err)
	}
}

// produce encodes and writes records, waiting for all of them (or for ctx
// to end). Records of one key keep their order.
func (a *Agent) produce(ctx context.Context, recs ...schemas.Record) error {
	done := make(chan error, 1)
	a.produceThen(ctx, recs, func(err error) { done <- err })
	return <-done
}

// produceThen encodes and writes records without waiting for them, and
// calls then once: with nil when the broker has taken every record, with
// the first error otherwise, or with ctx's error as soon as ctx ends (an
// idempotent producer keeps retrying a record in flight while the broker
// is away; the record stays buffered until Close). Records of one key keep
// their order. The client lingers for none of them (ProducerLinger(0)).
func (a *Agent) produceThen(ctx context.Context, recs []schemas.Record, then func(error)) {
	var encodeErr error
	krs := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		kr, err := kafka.ToKafka(ctx, a.codec, r)
		if err != nil {
			encodeErr = cmp.Or(encodeErr, err)
			continue
		}
		krs = append(krs, a.cfg.Kafka.Out(kr))
	}
	var once sync.Once
	finish := func(err error) { once.Do(func() { then(cmp.Or(encodeErr, err)) }) }
	if len(krs) == 0 {
		finish(nil)
		return
	}
	stop := context.AfterFunc(ctx, func() { finish(fmt.Errorf("produce %d records: %w", len(krs), ctx.Err())) })
	var mu sync.Mutex
	left := len(krs)
	var firstErr error
	for _, kr := range krs {
		a.cl.Produce(ctx, kr, func(r *kgo.Record, err error) {
			mu.Lock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("produce %s key %s: %w", r.Topic, r.Key, err)
			}
			left--
			last, err := left == 0, firstErr
			mu.Unlock()
			if last {
				stop()
				finish(err)
			}
		})
	}
}

// connWatch notices a broker coming back after an outage so that the hosts
// are announced again: the host processor may have marked them
// Disconnected meanwhile.
type connWatch struct{ a *Agent }

func (w connWatch) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		if !w.a.brokerLost.Swap(true) {
			w.a.log.Warn("broker unreachable; retrying with backoff", "err", err)
		}
		return
	}
	if w.a.brokerLost.Swap(false) {
		for _, h := range w.a.hosts {
			h.connected.Store(false)
		}
		select {
		case w.a.reconnect <- struct{}{}:
		default:
		}
	}
}
