package placement

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/memory"
	"github.com/vmplane/vmplane/processors/engine"
	pl "github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/schemas"
)

// Child roles of the Kafka scenario: the bench binary re-executes itself
// with -child <role>, so the processor has a process (and a collector) of
// its own, as in production, apart from the broker and the producer.
const (
	ChildPlacement = "placement"
	ChildNull      = "placement-null"
)

// IsChild tells whether role is one of this package's child roles.
func IsChild(role string) bool { return role == ChildPlacement || role == ChildNull }

// Bench-only topics of the null Step, zone-keyed like placement.requests.v1.
const (
	topicNullIn    = "bench.placement.null.in.v1"
	topicNullState = "bench.placement.null.state.v1"
	nullName       = "bench-placement-null"
	placementName  = "processor-placement"
)

var benchTopics = []schemas.TopicSpec{
	{Name: topicNullIn, KeyClass: schemas.KeyZone, Doc: "null-Step input: copies of the PlaceVm records"},
	{Name: topicNullState, KeyClass: schemas.KeyZone, Compacted: true, Doc: "null-Step changelog"},
}

// nullMachine decides nothing: every record leaves its zone one tiny
// state, so the runtime still writes one changelog record per zone and
// transaction, as for the placement machine, but encodes no zone.
type nullMachine struct{}

var nullZone = &schemas.ZoneRecord{}

func (nullMachine) Step(*schemas.ZoneRecord, schemas.Record, time.Time) (*schemas.ZoneRecord, []schemas.Record) {
	return nullZone, nil
}

func (nullMachine) Tick(*schemas.ZoneRecord, string, time.Time) (*schemas.ZoneRecord, []schemas.Record) {
	return nil, nil
}
func (nullMachine) Wake(*schemas.ZoneRecord) time.Time { return time.Time{} }

// RunChild runs a child role until ctx ends. It prints "ready" once every
// partition of its input is assigned and restored.
func RunChild(ctx context.Context, role string, brokers []string) error {
	kcfg := kafka.Config{Brokers: brokers}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// `vmplane processor`'s default collector setting.
	memory.GC{Percent: memory.RecommendedGCPercent}.Apply()
	var p interface {
		Run(ctx context.Context) error
		Ready() bool
		Assigned() int
	}
	switch role {
	case ChildPlacement:
		// The wiring of ops/roles (KindPlacement), repeated as the storm's
		// child repeats KindVM's.
		pp, err := engine.New(engine.Config{Name: placementName, Kafka: kcfg, InstanceID: "bench", Logger: log,
			Inputs: []string{schemas.TopicPlacementRequests}, Changelog: schemas.TopicPlacementState, Settings: schemas.TopicSettings},
			engine.Machine[*schemas.ZoneRecord](pl.New(pl.DefaultConfig())))
		if err != nil {
			return err
		}
		p = pp
	case ChildNull:
		np, err := engine.New(engine.Config{Name: nullName, Inputs: []string{topicNullIn}, Changelog: topicNullState,
			Kafka: kcfg, InstanceID: "bench", Logger: log, SkipDecode: true}, engine.Machine[*schemas.ZoneRecord](nullMachine{}))
		if err != nil {
			return err
		}
		p = np
	default:
		return fmt.Errorf("unknown child role %q", role)
	}
	if role == ChildPlacement {
		stop, err := harness.CPUProfile(os.Getenv("VMPLANE_BENCH_CPUPROFILE"), log)
		if err != nil {
			return err
		}
		defer stop()
	}
	want := int(schemas.Partitions[schemas.KeyZone])
	go func() {
		for ctx.Err() == nil {
			if p.Assigned() == want && p.Ready() {
				fmt.Println("ready")
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return p.Run(ctx)
}

// startChild starts a child role and waits for its ready line.
func startChild(ctx context.Context, role string, brokers []string) (*harness.Child, error) {
	c, err := harness.StartChild([]string{"-child", role, "-brokers", strings.Join(brokers, ",")})
	if err != nil {
		return nil, err
	}
	if _, err := c.WaitReady(ctx, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("child %s: %w", role, err)
	}
	return c, nil
}

// topics are the topics of the Kafka scenario's broker.
func topics() []schemas.TopicSpec { return slices.Concat(schemas.Topics, benchTopics) }
