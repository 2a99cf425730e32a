package roles

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// gatewayRole owns the gateway's connections.
type gatewayRole struct {
	srv *gateway.Server
	rm  *postgres.Reader
	pub *gateway.KafkaPublisher
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
	return &gatewayRole{srv: gateway.New(cfg, rm, pub), rm: rm, pub: pub}, nil
}

func (g *gatewayRole) Run(ctx context.Context) error {
	return g.srv.Run(ctx)
}
