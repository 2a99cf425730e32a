package placement

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	pl "github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/schemas"
)

// kafkaTarget is issue 31's target for placement through Kafka, decisions/s.
const kafkaTarget = 20_000

// kafkaSize is the Kafka scenario's zone: hosts, live VMs per host before
// the timed requests, and how many PlaceVm are timed.
type kafkaSize struct{ hosts, fill, decisions int }

var (
	kafkaFull  = kafkaSize{hosts: 10_000, fill: 32, decisions: 50_000}
	kafkaQuick = kafkaSize{hosts: 1_000, fill: 1, decisions: 2_000}
)

// kafkaRows runs the Kafka scenario count times, up to the first failure,
// and returns its row.
func kafkaRows(ctx context.Context, count int, quick bool) []harness.Row {
	sz := kafkaFull
	if quick {
		sz = kafkaQuick
	}
	var proc, null []float64
	var runErr error
	for range count {
		r, n, err := runKafka(ctx, sz)
		if err != nil {
			runErr = err
			break
		}
		proc, null = append(proc, r), append(null, n)
	}
	r := harness.Row{Scenario: "placement", Unit: "decisions/s",
		Figure:    fmt.Sprintf("decisions/s through Kafka at %d hosts, %s", sz.hosts, pl.FirstFitName),
		Value:     harness.Summarize(proc),
		LimitName: "null Step, same runtime", Limit: harness.Summarize(null),
		Target: &harness.Target{AtLeast: true, Value: kafkaTarget},
		How: fmt.Sprintf("a fresh kfake broker; a zone of %d hosts filled by the placement machine in the harness to %d live VMs per host, "+
			"written as one ZoneRecord onto placement.state.v1 (not timed); the placement processor (processors/engine, transactions, wired as ops/roles wires it) "+
			"in a child process restores it; one PlaceVm and its commit warm it up; then %d FirstFit PlaceVm, each followed by the ReleaseVm of the VM placed "+
			"a zone's worth earlier, encoded before, are produced at once onto placement.requests.v1: decisions / wall clock from the first produce until the "+
			"processor's group has committed the last record (kadm, every 5 ms), which commits its PlacementDecided in the same transaction; every answer "+
			"is then checked to be a PlacementDecided. Limit: the same records produced into a bench topic consumed by the same runtime "+
			"with engine.Config.SkipDecode and a machine that decides nothing (one tiny changelog record per zone and transaction), timed alike.",
			sz.hosts, sz.fill, sz.decisions),
	}
	if runErr != nil {
		r.Err = runErr.Error()
	}
	r.Judge()
	return []harness.Row{r}
}

// runKafka runs one repetition and returns the processor's and the null
// Step's decisions/s.
func runKafka(ctx context.Context, sz kafkaSize) (proc, null float64, err error) {
	broker, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		return 0, 0, err
	}
	defer broker.Close()
	kcfg := kafka.Config{Brokers: broker.Addrs()}
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(2*sz.decisions+1))...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	if err := kcfg.EnsureTopics(ctx, cl, topics(), kafka.TopicOptions{Replication: 1}); err != nil {
		return 0, 0, err
	}
	recs, err := seedZone(ctx, kcfg, sz)
	if err != nil {
		return 0, 0, err
	}
	adm := kadm.NewClient(cl)
	nullRecs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		c := *r
		c.Topic = topicNullIn
		nullRecs[i] = &c
	}
	if null, err = timeChild(ctx, cl, adm, kcfg.Brokers, ChildNull, kcfg.Group("vmplane-"+nullName), nullRecs, sz.decisions); err != nil {
		return 0, 0, fmt.Errorf("null step: %w", err)
	}
	if proc, err = timeChild(ctx, cl, adm, kcfg.Brokers, ChildPlacement, kcfg.Group("vmplane-"+placementName), recs, sz.decisions); err != nil {
		return 0, 0, fmt.Errorf("placement processor: %w", err)
	}
	if err := checkDecided(ctx, kcfg, sz.decisions+1); err != nil {
		return 0, 0, err
	}
	return proc, null, nil
}

// checkDecided reads vm.signals.v1 (read_committed) until it has seen n
// answers, and fails unless every one is a PlacementDecided: the zone has
// room for every timed VM, so a failure is a bug.
func checkDecided(ctx context.Context, kcfg kafka.Config, n int) error {
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumeTopics(schemas.TopicVmSignals), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	codec := schemas.NewCodec(nil)
	deadline := time.Now().Add(time.Minute)
	decided, why := 0, ""
	for seen := 0; seen < n; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d answers on %s", seen, n, schemas.TopicVmSignals)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		for _, kr := range fs.Records() {
			r, err := kafka.FromKafka(ctx, codec, kr)
			if err != nil {
				return err
			}
			seen++
			switch v := r.Value.(type) {
			case *schemas.PlacementDecided:
				decided++
			case *schemas.PlacementFailed:
				why = v.Reason + ": " + v.Detail
			}
		}
	}
	if decided != n {
		return fmt.Errorf("%d of %d placements decided, the others failed (the last: %s)", decided, n, why)
	}
	return nil
}

// seedZone fills a zone with the placement machine, writes it onto the
// changelog, and returns the encoded requests to time: a warm-up PlaceVm,
// then sz.decisions more, each followed by the ReleaseVm of the VM placed
// a zone's worth earlier, so the zone stays at its fill (as in
// BenchmarkDecide) and every anti-affinity group finds hosts.
func seedZone(ctx context.Context, kcfg kafka.Config, sz kafkaSize) ([]*kgo.Record, error) {
	const zone = "z1"
	m := pl.New(pl.DefaultConfig())
	now := time.Now()
	var z *schemas.ZoneRecord
	step := func(v any) {
		z, _ = m.Step(z, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: v}, now)
	}
	for _, st := range hostStatuses(zone, sz.hosts) {
		step(st)
	}
	live := sz.hosts * sz.fill
	for i := range live {
		step(placeVm(zone, pl.FirstFitName, i))
	}
	codec := schemas.NewCodec(nil)
	kr, err := kafka.ToKafka(ctx, codec, schemas.Record{Topic: schemas.TopicPlacementState, Key: zone, Value: z})
	if err != nil {
		return nil, err
	}
	// The zone is megabytes: a client of its own may send a batch as large
	// as a changelog record may be, which the input topics refuse.
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ProducerBatchMaxBytes(kafka.StateMaxBytes))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
		return nil, fmt.Errorf("seed the zone: %w", err)
	}
	recs := make([]*kgo.Record, 0, 2*sz.decisions+1)
	add := func(v any) error {
		kr, err := kafka.ToKafka(ctx, codec, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: v})
		recs = append(recs, kr)
		return err
	}
	for i := live; i <= live+sz.decisions; i++ {
		if err := add(placeVm(zone, pl.FirstFitName, i)); err != nil {
			return nil, err
		}
		if i == live {
			continue // the warm-up
		}
		if err := add(releaseVm(zone, i-live, false)); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// timeChild starts a child role, warms it up with recs[0] and returns the
// rate at which it commits the rest, as decisions/s.
func timeChild(ctx context.Context, cl *kgo.Client, adm *kadm.Client, brokers []string, role, group string, recs []*kgo.Record, decisions int) (float64, error) {
	c, err := startChild(ctx, role, brokers)
	if err != nil {
		return 0, err
	}
	defer c.Stop()
	topic := recs[0].Topic
	if err := cl.ProduceSync(ctx, recs[0]).FirstErr(); err != nil {
		return 0, err
	}
	if _, err := waitCommitted(ctx, adm, group, topic, 1, nil); err != nil {
		return 0, err
	}
	failed := make(chan error, 1)
	start := time.Now()
	for _, r := range recs[1:] {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case failed <- err:
				default:
				}
			}
		})
	}
	end, err := waitCommitted(ctx, adm, group, topic, int64(len(recs)), failed)
	if err != nil {
		return 0, err
	}
	return float64(decisions) / end.Sub(start).Seconds(), nil
}

// waitCommitted waits until group has committed want records of topic
// (summed over its partitions), polling every 5 ms, and returns when it
// saw it; a produce error on failed ends the wait.
func waitCommitted(ctx context.Context, adm *kadm.Client, group, topic string, want int64, failed <-chan error) (time.Time, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		o, err := adm.FetchOffsets(ctx, group)
		var n int64
		o.Each(func(r kadm.OffsetResponse) {
			if r.Topic == topic && r.Err == nil && r.At > 0 {
				n += r.At
			}
		})
		if err == nil && n >= want {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s committed %d of %d records of %s (err %v)", group, n, want, topic, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case err := <-failed:
			return time.Time{}, fmt.Errorf("produce: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
