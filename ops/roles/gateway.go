package roles

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// gatewayRole owns the gateway's connections.
type gatewayRole struct {
	srv *gateway.Server
	rm  *postgres.Reader
	pub *gateway.KafkaPublisher
	// events feeds the SSE streams; it runs as long as the server.
	events *gateway.Fanout
	// jobs wakes the long-polls of GET /v1/jobs/{id}?wait= at the
	// projector's commits; it runs as long as the server.
	jobs  *postgres.JobWatch
	kafka kafka.Config
}

// NewGateway returns the REST gateway over the read models at dsn.
func NewGateway(ctx context.Context, o Options, dsn string, cfg gateway.Config) (Runner, error) {
	rm, err := postgres.NewReader(ctx, dsn)
	if err != nil {
		return nil, err
	}
	pub, err := gateway.NewKafkaPublisher(o.Kafka)
	if err != nil {
		rm.Close()
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = o.Logger
	}
	ping, err := kgo.NewClient(o.Kafka.Opts()...)
	if err != nil {
		return nil, err
	}
	cfg.Ready = func(ctx context.Context) error {
		if err := ping.Ping(ctx); err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		return nil
	}
	// Idempotency-Keys live in Postgres, shared by every gateway instance.
	if cfg.Idempotency == nil {
		idem, err := postgres.NewIdempotency(ctx, dsn)
		if err != nil {
			return nil, err
		}
		cfg.Idempotency = idem
	}
	// The event streams are fed from vm.events.v1 by this instance's fanout.
	if cfg.Events == nil {
		cfg.Events = gateway.NewFanout(cfg.Logger, 0)
	}
	jobs := postgres.NewJobWatch(dsn, cfg.Logger)
	cfg.JobChanges = jobs
	return &gatewayRole{srv: gateway.New(cfg, rm, pub), rm: rm, pub: pub, events: cfg.Events, jobs: jobs, kafka: o.Kafka}, nil
}

func (g *gatewayRole) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fanoutErr := make(chan error, 1)
	go func() { fanoutErr <- g.events.Run(ctx, g.kafka) }()
	jobsDone := make(chan struct{})
	go func() { defer close(jobsDone); _ = g.jobs.Run(ctx) }()
	err := g.srv.Run(ctx)
	cancel()
	<-jobsDone
	if ferr := <-fanoutErr; err == nil && ferr != nil {
		err = fmt.Errorf("event fanout: %w", ferr)
	}
	return err
}
