package dev

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// Observe registers the stack's readiness checks on o (every processor
// restored, Kafka answering) and reports every group's lag on /metrics:
// the dev stack serves all roles' metrics on one address.
func (s *Stack) Observe(ctx context.Context, o *roles.Observer) error {
	for i, p := range s.procs {
		o.Check(fmt.Sprintf("processor-%s", roles.ProcessorKinds[i%len(roles.ProcessorKinds)]), roles.ProcessorReady(p))
	}
	for name, p := range s.projectors {
		o.Check(name+"-retries", func(context.Context) error { return p.Health() })
	}
	pool, err := pgxpool.New(ctx, s.dsn)
	if err != nil {
		return fmt.Errorf("lag of the postgres projector: %w", err)
	}
	o.Check("postgres", pool.Ping)
	context.AfterFunc(ctx, pool.Close)
	sources := []telemetry.LagSource{postgres.StoredLag(pool, s.kcfg, postgres.DefaultGroup), {Group: s.kcfg.Group("vmplane-projector-journal")}}
	for _, kind := range roles.ProcessorKinds {
		sources = append(sources, roles.ProcessorLag(s.kcfg, kind))
	}
	cl, err := roles.WatchLag(s.kcfg, sources...)
	if err != nil {
		return err
	}
	o.Check("kafka", roles.KafkaReady(cl))
	context.AfterFunc(ctx, cl.Close)
	return nil
}
