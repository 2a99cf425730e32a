package placement

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/processors/engine"
	pl "github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/schemas"
)

// runtimeDecisions is how many PlaceVm records one iteration sends.
const runtimeDecisions = 5_000

// BenchmarkRuntime places runtimeDecisions VMs through the real runtime on
// kfake. The zone is one changelog record, re-encoded once per transaction,
// so its size (hosts and allocations) weighs on every batch.
func BenchmarkRuntime(b *testing.B) {
	for _, hosts := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("hosts=%d/%s", hosts, pl.FirstFitName), func(b *testing.B) {
			benchRuntime(b, hosts)
		})
	}
}

func benchRuntime(b *testing.B, hosts int) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	broker, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	kcfg := kafka.Config{Brokers: broker.Addrs()}
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumeTopics(schemas.TopicVmSignals), kgo.ProducerBatchMaxBytes(16<<20))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := kcfg.EnsureTopics(ctx, cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		b.Fatal(err)
	}
	p, err := engine.New(engine.Config{
		Name: "bench-placement", Kafka: kcfg, InstanceID: "bench",
		Inputs: []string{schemas.TopicPlacementRequests}, Changelog: schemas.TopicPlacementState,
		Logger: slog.New(slog.DiscardHandler),
	}, engine.Machine[*schemas.ZoneRecord](pl.New(pl.DefaultConfig())))
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	codec := schemas.NewCodec(nil)
	const zone = "z1"
	send := func(v any) {
		kr, err := kafka.ToKafka(ctx, codec, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: v})
		if err != nil {
			b.Fatal(err)
		}
		cl.Produce(ctx, kr, func(_ *kgo.Record, err error) {
			if err != nil && ctx.Err() == nil {
				b.Error(err)
			}
		})
	}
	for _, st := range hostStatuses(zone, hosts) {
		send(st)
	}
	next := 0
	// One decision first: the hosts are in and the processor owns the zone.
	send(placeVm(zone, pl.FirstFitName, next))
	next++
	await(b, ctx, cl, 1, done)

	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for range runtimeDecisions {
			send(placeVm(zone, pl.FirstFitName, next))
			next++
		}
		await(b, ctx, cl, runtimeDecisions, done)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(b.N * runtimeDecisions)
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/decision")
	b.ReportMetric(n/elapsed.Seconds(), "decisions/s")
}

// await reads vm.signals.v1 until n decisions arrived.
func await(b *testing.B, ctx context.Context, cl *kgo.Client, n int, done <-chan error) {
	b.Helper()
	codec := schemas.NewCodec(nil)
	deadline := time.Now().Add(5 * time.Minute)
	for n > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%d decisions still missing", n)
		}
		select {
		case err := <-done:
			b.Fatalf("processor stopped: %v", err)
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		for _, kr := range fs.Records() {
			r, err := kafka.FromKafka(ctx, codec, kr)
			if err != nil {
				b.Fatal(err)
			}
			switch v := r.Value.(type) {
			case *schemas.PlacementDecided:
				n--
			case *schemas.PlacementFailed:
				b.Fatalf("placement failed: %s %s", v.Reason, v.Detail)
			}
		}
	}
}
