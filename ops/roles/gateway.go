package roles

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/processors/host"
	"github.com/vmplane/vmplane/processors/vm"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// The gateway finds the reads it may do without (accounts, leases,
// capacity) by asserting its read model at run time: the Postgres reader
// is held to all of them here, when the role is built.
var _ interface {
	gateway.ReadModel
	gateway.AccountReader
	gateway.LeaseReader
	gateway.CapacityReader
	gateway.InventoryReader
} = (*readmodel.Reader)(nil)

// prepareInventory creates the inventory gauges of every VM state and host
// status at 0, so that a fresh /metrics has them before the first read and
// an empty read model shows zeros, not nothing. The gateway knows no state
// of its own; the processors that own the states are named here, where the
// roles are wired.
func prepareInventory() {
	for _, s := range []string{vm.StateBuilding, vm.StateActive, vm.StateStopped, vm.StatePaused, vm.StateSuspended,
		vm.StateRescued, vm.StateResized, vm.StateError, vm.StateDeleted} {
		telemetry.VMs.With(s)
	}
	for _, s := range []string{host.StatusCreating, host.StatusConnecting, host.StatusUp, host.StatusDown,
		host.StatusDisconnected, host.StatusAlert, host.StatusRemoved, host.StatusError, host.StatusRebalancing} {
		telemetry.Hosts.With(s)
	}
}

// gatewayRole is the REST gateway. Each Run opens the connections it
// serves with (read model, idempotency and accepted-id pools, Kafka
// publisher and readiness client) and closes them when it returns, so that
// a role restarted by Supervise, or a stack started again in the same
// process, leaves no pool or client behind.
type gatewayRole struct {
	cfg   gateway.Config
	dsn   string
	kafka kafka.Config
}

// NewGateway returns the REST gateway over the read models at dsn.
func NewGateway(o Options, dsn string, cfg gateway.Config) (Runner, error) {
	if _, err := pgxpool.ParseConfig(dsn); err != nil {
		return nil, fmt.Errorf("gateway: read model DSN: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = o.Logger
	}
	// The event streams are fed from vm.events.v1 by this instance's
	// fanout; its ring outlives a restart of the role.
	if cfg.Events == nil {
		cfg.Events = gateway.NewFanout(cfg.Logger, 0)
	}
	cfg.Events.FedByRun()
	prepareInventory()
	return &gatewayRole{cfg: cfg, dsn: dsn, kafka: o.Kafka}, nil
}

// Run serves until ctx ends; it returns nil on cancellation, also while it
// is still opening its connections.
func (g *gatewayRole) Run(ctx context.Context) error {
	err := g.run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (g *gatewayRole) run(ctx context.Context) error {
	rm, err := readmodel.NewReader(ctx, g.dsn)
	if err != nil {
		return err
	}
	defer rm.Close()
	pub, err := gateway.NewKafkaPublisher(g.kafka)
	if err != nil {
		return err
	}
	defer pub.Close()
	ping, err := kgo.NewClient(g.kafka.Opts()...)
	if err != nil {
		return fmt.Errorf("gateway readiness client: %w", err)
	}
	defer ping.Close()
	cfg := g.cfg
	also := g.cfg.Ready
	cfg.Ready = func(ctx context.Context) error {
		if err := ping.Ping(ctx); err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		if also != nil {
			return also(ctx)
		}
		return nil
	}
	// Idempotency-Keys live in Postgres, shared by every gateway instance.
	if cfg.Idempotency == nil {
		idem, err := readmodel.NewIdempotency(ctx, g.dsn)
		if err != nil {
			return err
		}
		defer idem.Close()
		cfg.Idempotency = idem
	}
	// So are the ids handed out in 202s until the projector has them: a
	// client may act on one at once, through any instance.
	if cfg.Accepted == nil {
		acc, err := readmodel.NewAccepted(ctx, g.dsn)
		if err != nil {
			return err
		}
		defer acc.Close()
		cfg.Accepted = acc
	}
	// jobs wakes the long-polls of GET /v1/jobs/{id}?wait= at the
	// projector's commits; it runs as long as the server.
	jobs := readmodel.NewJobWatch(g.dsn, cfg.Logger)
	cfg.JobChanges = jobs
	srv := gateway.New(cfg, rm, pub)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fanoutErr := make(chan error, 1)
	go func() {
		// Run returns early only when it cannot feed at all: the role
		// stops (and is restarted) rather than serve streams that 503.
		err := cfg.Events.Run(ctx, g.kafka, gateway.OwnersFrom(rm), gateway.PositionFrom(rm))
		if err != nil {
			cancel()
		}
		fanoutErr <- err
	}()
	jobsDone := make(chan struct{})
	go func() { defer close(jobsDone); _ = jobs.Run(ctx) }()
	// The inventory gauges and the dead letters of /metrics: what exists,
	// read from the read model and dlq.v1's offsets.
	telemetry.RegisterDeadLetters(ping, g.kafka.Topic(schemas.TopicDLQ))
	inventoryDone := make(chan struct{})
	go func() {
		defer close(inventoryDone)
		gateway.ReportInventory(ctx, rm, gateway.InventoryEvery, cfg.Logger)
	}()
	err = srv.Run(ctx)
	cancel()
	<-jobsDone
	<-inventoryDone
	if ferr := <-fanoutErr; err == nil && ferr != nil {
		err = fmt.Errorf("event fanout: %w", ferr)
	}
	return err
}
