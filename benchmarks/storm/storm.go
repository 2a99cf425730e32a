package storm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// Size is one scenario size.
type Size struct {
	VMs, Hosts int
	// ChangedEvery makes every n-th VM one whose power state changed while
	// the control plane was away (seeded Stopped, reported PowerOn).
	ChangedEvery int
	Runs         int
	// IdleWindow is how long the idle CPU of the VM processor is measured.
	IdleWindow time.Duration
}

// Full and Quick are the sizes of `make bench` and `make bench QUICK=1`.
var (
	Full  = Size{VMs: 500_000, Hosts: 10_000, ChangedEvery: 10, Runs: 3, IdleWindow: 5 * time.Second}
	Quick = Size{VMs: 2_000, Hosts: 40, ChangedEvery: 10, Runs: 3, IdleWindow: time.Second}
)

// Sample is what one repetition measured.
type Sample struct {
	StormProcessor, StormEnd time.Duration // from the agent's start
	NullStep, Raw            time.Duration // from the first produce
	StormWrites              map[string]int64
	SeedWrites               map[string]int64 // the seeding projector's, counted before the storm
	Changed                  int
	RestoreMs                int64
	Restored                 int64
	HeapBytes                int64         // VM processor heap after restore minus before
	ChangelogRead            time.Duration // vm.state.v1 read raw, start to end
	IdleCPU                  float64       // fraction of one core
	CPUPerReport             time.Duration
	SteadyWrites             map[string]int64
	SteadyCPU                float64 // fraction of one core at one round per 60 s
}

func vmID(i int) string { return fmt.Sprintf("vm-%07d", i) }

// Run runs one repetition at size sz against the Postgres server at pgBase.
func Run(ctx context.Context, sz Size, pgBase string, log *slog.Logger) (Sample, error) {
	var s Sample
	e, drv, w0, err := seededStorm(ctx, sz, pgBase, log, &s)
	if err != nil {
		return s, err
	}
	defer e.close()

	if s.ChangelogRead, err = e.readChangelog(ctx, int64(sz.VMs)); err != nil {
		return s, fmt.Errorf("changelog read: %w", err)
	}
	vmc, err := startChild(ctx, ChildVM, e.kcfg.Brokers)
	if err != nil {
		return s, err
	}
	defer vmc.Stop()
	s.RestoreMs, s.Restored, s.HeapBytes = vmc.restoreMs, vmc.restored, vmc.heapBytes
	if s.StormProcessor, s.StormEnd, err = e.storm(ctx, sz, drv, log); err != nil {
		return s, err
	}
	w1, err := e.tableWrites(ctx)
	if err != nil {
		return s, err
	}
	_, s.StormWrites = diffWrites(w0, w1)

	if err := e.steady(ctx, &s, sz, drv, vmc, log); err != nil {
		return s, fmt.Errorf("steady state: %w", err)
	}
	err = e.floors(ctx, &s, sz) // apart: s is read after floors fills it
	return s, err
}

// seededStorm is a storm's start: a fresh env, the fleet of sz running
// on its sim hosts, the VM processor's changelog and the read model
// seeded (s takes the changed count and the seeding's writes); it returns
// the tables' writes counted from there. The caller closes the env.
func seededStorm(ctx context.Context, sz Size, pgBase string, log *slog.Logger, s *Sample) (*env, *sim.Driver, map[string]int64, error) {
	e, err := newEnv(ctx, pgBase, log)
	if err != nil {
		return nil, nil, nil, err
	}
	drv, hosts, perHost, err := startFleet(ctx, sz)
	if err == nil {
		if s.Changed, err = e.seed(ctx, sz, hosts, perHost); err != nil {
			err = fmt.Errorf("seed: %w", err)
		}
	}
	var w0 map[string]int64
	if err == nil {
		w0, err = e.projectSeed(ctx, s, sz)
	}
	if err != nil {
		e.close()
		return nil, nil, nil, err
	}
	return e, drv, w0, nil
}

// startFleet makes the simulated hosts of sz and starts its VMs on them,
// perHost to a host (the last one takes what is left).
func startFleet(ctx context.Context, sz Size) (drv *sim.Driver, hosts []agent.HostInfo, perHost int, err error) {
	drv, err = sim.New(sim.Config{Layout: sim.Layout{Zone: "z1", Pods: 1, ClustersPerPod: max(sz.Hosts/20, 1),
		HostsPerCluster: min(sz.Hosts, 20), CPU: 1024, MemoryMB: 4 << 20}})
	if err != nil {
		return nil, nil, 0, err
	}
	hosts = drv.Hosts()
	perHost = sz.VMs / len(hosts)
	for i := range sz.VMs {
		h := hosts[min(i/perHost, len(hosts)-1)]
		if err := drv.Start(ctx, h.ID, agent.VMSpec{ID: vmID(i), CPU: 1, MemoryMB: 512}); err != nil {
			return nil, nil, 0, err
		}
	}
	return drv, hosts, perHost, nil
}

// projectSeed builds the read model of the seeded VMs, then counts the
// tables' writes from here on; it returns the counts at that start.
func (e *env) projectSeed(ctx context.Context, s *Sample, sz Size) (map[string]int64, error) {
	p, err := e.startProjector(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := e.waitProjected(ctx, schemas.TopicVmEvents, 10*time.Minute); err != nil {
		p.stop()
		return nil, err
	}
	p.stop()
	seeded, err := e.rowCount(ctx, "vms")
	if err != nil {
		return nil, err
	}
	if seeded != int64(sz.VMs) {
		return nil, fmt.Errorf("seed: the read model has %d of %d VMs", seeded, sz.VMs)
	}
	s.SeedWrites = map[string]int64{"vms": seeded}
	if err := e.countWrites(ctx); err != nil {
		return nil, err
	}
	return e.tableWrites(ctx)
}

// storm times the storm: from the agent's start until the VM processor has
// committed every report (processor) and the projector has stored the end
// of vm.events.v1 (end).
func (e *env) storm(ctx context.Context, sz Size, drv *sim.Driver, log *slog.Logger) (processor, end time.Duration, err error) {
	p, err := e.startProjector(ctx)
	if err != nil {
		return 0, 0, err
	}
	// The harness's own CPU (broker, agent, projector) over the round.
	stopProfile, err := harness.CPUProfile(os.Getenv("VMPLANE_BENCH_HARNESS_CPUPROFILE"), log)
	if err != nil {
		p.stop()
		return 0, 0, err
	}
	defer stopProfile()
	group := "vmplane-processor-vm"
	t0 := time.Now()
	stopAgent, err := runAgent(ctx, e.kcfg, drv, log)
	if err != nil {
		p.stop()
		return 0, 0, err
	}
	t1, err := e.waitCommitted(ctx, group, schemas.TopicVmPower, int64(sz.VMs), 10*time.Minute)
	if err == nil {
		var t2 time.Time
		t2, err = e.waitProjected(ctx, schemas.TopicVmEvents, 10*time.Minute)
		processor, end = t1.Sub(t0), t2.Sub(t0)
	}
	stopProfile()
	stopAgent()
	p.stop()
	if err != nil {
		return processor, end, fmt.Errorf("storm: %w", err)
	}
	return processor, end, nil
}

// floors measures what the figures are held against: a processor step
// that does nothing, and a raw produce and consume, over the reports of
// the storm.
func (e *env) floors(ctx context.Context, s *Sample, sz Size) error {
	recs, err := e.capture(ctx, sz.VMs)
	if err != nil {
		return fmt.Errorf("capture reports: %w", err)
	}
	if s.NullStep, err = e.nullStep(ctx, recs); err != nil {
		return fmt.Errorf("null step: %w", err)
	}
	if s.Raw, err = e.raw(ctx, recs); err != nil {
		return fmt.Errorf("raw produce+consume: %w", err)
	}
	return nil
}

// runAgent starts a sim agent over drv with a ping interval longer than
// any scenario, so that it reports exactly one round, at once.
func runAgent(ctx context.Context, kcfg kafka.Config, drv *sim.Driver, log *slog.Logger) (stop func(), err error) {
	a := agent.New(agent.Config{ID: "bench", Kafka: kcfg, PingInterval: time.Hour, Logger: log, ShutdownGrace: 2 * time.Second}, drv)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return func() {
		a.Stop()
		if err := <-done; err != nil {
			log.Warn("agent", "err", err)
		}
	}, nil
}

// seed writes the VM processor's state and the read model's rows of every
// VM, as a running system would have them before its agents reconnect:
// VmRecords on vm.state.v1 (the changelog; restoring it is the deploy path,
// not the measured one) and VmStateChanged on vm.events.v1 in transactions.
// Steady VMs are Active and PowerOn with power_state_update_count at the
// limit; every ChangedEvery-th VM is Stopped and PowerOff, and its agent
// reports it PowerOn. It returns how many VMs changed.
func (e *env) seed(ctx context.Context, sz Size, hosts []agent.HostInfo, perHost int) (int, error) {
	codec := schemas.NewCodec(nil)
	txn, err := kgo.NewClient(e.kcfg.Opts(kgo.TransactionalID("bench-seed"), kgo.ProducerBatchMaxBytes(batchMaxBytes), kgo.MaxBufferedRecords(100_000))...)
	if err != nil {
		return 0, err
	}
	defer txn.Close()
	pr := &producer{cl: txn}
	const chunk = 50_000
	at := time.Now().Add(-time.Hour).UnixMilli()
	changed := 0
	for lo := 0; lo < sz.VMs; lo += chunk {
		if err := txn.BeginTransaction(); err != nil {
			return 0, err
		}
		for i := lo; i < min(lo+chunk, sz.VMs); i++ {
			h := hosts[min(i/perHost, len(hosts)-1)]
			vmState, power, legacy := "Active", schemas.PowerOn, "Running"
			if sz.ChangedEvery > 0 && i%sz.ChangedEvery == 0 {
				vmState, power, legacy = "Stopped", schemas.PowerOff, "Stopped"
				changed++
			}
			off := schemas.Offering{ID: "small", Name: "small", CPU: 1, MemoryMB: 512}
			rec := &schemas.VmRecord{VmID: vmID(i), Name: vmID(i), Account: "bench", ZoneID: "z1", Offering: off,
				VmState: vmState, PowerState: power, PowerHost: h.ID, PowerStateUpdateTime: at, PowerStateUpdateCount: 3,
				HostID: h.ID, PodID: h.Pod, ClusterID: h.Cluster, Epoch: 1, CreatedAt: at, UpdatedAt: at,
				// Its host's last report before the outage (an agent's
				// sequences start at its start's Unix ms × 1000).
				ReportSeq: map[string]int64{h.ID: at * 1000}}
			ev := &schemas.VmStateChanged{VmID: vmID(i), Name: vmID(i), Account: "bench", ZoneID: "z1", Offering: off,
				VmState: vmState, PowerState: power, PowerHost: h.ID, LegacyState: legacy, HostID: h.ID, Epoch: 1,
				PowerStateUpdateTime: at, PowerStateUpdateCount: 3, CreatedAt: at, UpdatedAt: at, Reason: "bench seed"}
			for _, r := range []schemas.Record{{Topic: schemas.TopicVmState, Key: vmID(i), Value: rec}, {Topic: schemas.TopicVmEvents, Key: vmID(i), Value: ev}} {
				kr, err := kafka.ToKafka(ctx, codec, r)
				if err != nil {
					return 0, err
				}
				pr.produce(ctx, e.kcfg.Out(kr))
			}
		}
		if err := pr.flush(ctx); err != nil {
			_ = txn.EndTransaction(ctx, kgo.TryAbort)
			return 0, err
		}
		if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return 0, err
		}
	}
	return changed, nil
}

// capture reads the first n records of vm.power.v1: the encoded reports of
// the storm, replayed by the limits.
func (e *env) capture(ctx context.Context, n int) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(e.kcfg.Opts(kgo.ConsumeTopics(e.kcfg.Topic(schemas.TopicVmPower)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := make([]*kgo.Record, 0, n)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for len(out) < n {
		f := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			return nil, fmt.Errorf("captured %d of %d: %w", len(out), n, cctx.Err())
		}
		f.EachRecord(func(r *kgo.Record) {
			if len(out) < n {
				out = append(out, &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Partition: r.Partition})
			}
		})
	}
	return out, nil
}

// replay produces recs into topic, each to the partition it came from.
func (e *env) replay(ctx context.Context, topic string, recs []*kgo.Record) error {
	cl, err := kgo.NewClient(e.kcfg.Opts(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(batchMaxBytes), kgo.MaxBufferedRecords(100_000))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pr := &producer{cl: cl}
	for _, r := range recs {
		cp := *r
		cp.Topic = topic
		pr.produce(ctx, &cp)
	}
	return pr.flush(ctx)
}

// nullStep times recs through the runtime with the null machine: from the
// first produce until the null processor committed them all.
func (e *env) nullStep(ctx context.Context, recs []*kgo.Record) (time.Duration, error) {
	c, err := startChild(ctx, ChildNull, e.kcfg.Brokers)
	if err != nil {
		return 0, err
	}
	defer c.Stop()
	t0 := time.Now()
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errc := make(chan error, 1)
	go func() {
		err := e.replay(ctx, topicNullIn, recs)
		if err != nil {
			// Records that never arrive are never committed: stop waiting.
			cancel(fmt.Errorf("replay: %w", err))
		}
		errc <- err
	}()
	t1, err := e.waitCommitted(wctx, "vmplane-"+nullName, topicNullIn, int64(len(recs)), 10*time.Minute)
	if perr := <-errc; perr != nil {
		return 0, fmt.Errorf("replay: %w", perr)
	}
	return t1.Sub(t0), err
}

// raw times recs produced into and consumed from kfake with plain clients.
func (e *env) raw(ctx context.Context, recs []*kgo.Record) (time.Duration, error) {
	parts := map[int32]kgo.Offset{}
	for p := range schemas.Partitions[schemas.KeyVM] {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(e.kcfg.Opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topicRaw: parts}))...)
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- e.replay(ctx, topicRaw, recs) }()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	n := 0
	for n < len(recs) {
		f := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			return 0, fmt.Errorf("consumed %d of %d", n, len(recs))
		}
		n += f.NumRecords()
	}
	d := time.Since(t0)
	return d, <-errc
}

// readChangelog is the restore's limit: a plain kgo consumer
// (read_committed, as the runtime restores) reading every partition of
// vm.state.v1 from start until it has seen the n seeded records, decoding
// nothing. It runs before the processor starts, so the changelog holds
// exactly the seeded records.
func (e *env) readChangelog(ctx context.Context, n int64) (time.Duration, error) {
	parts := map[int32]kgo.Offset{}
	for p := range schemas.Partitions[schemas.KeyVM] {
		parts[p] = kgo.NewOffset().AtStart()
	}
	t0 := time.Now()
	cl, err := kgo.NewClient(e.kcfg.Opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{e.kcfg.Topic(schemas.TopicVmState): parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var got int64
	for got < n {
		f := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			return 0, fmt.Errorf("read %d of %d records", got, n)
		}
		got += int64(f.NumRecords())
	}
	return time.Since(t0), nil
}
