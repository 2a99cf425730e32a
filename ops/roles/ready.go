package roles

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// Readiness and lag of the standalone projector and agent roles: what
// `vmplane projector` and `vmplane agent` register on their Observer. The
// processors have theirs in observe.go.

// GroupAssigned checks that group is stable and that every partition of
// topics is assigned to one of its members (both by the names the cluster
// knows, after any topic prefix): the projection is running everywhere. It
// reads the group through cl's admin API, so it holds however the consumer
// itself is built.
func GroupAssigned(cl *kgo.Client, group string, topics []string) func(context.Context) error {
	adm := kadm.NewClient(cl)
	return func(ctx context.Context) error {
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return fmt.Errorf("describe group %s: %w", group, err)
		}
		g, ok := described[group]
		if errors.Is(g.Err, kerr.GroupIDNotFound) {
			return fmt.Errorf("group %s has no members", group)
		}
		if !ok || g.Err != nil {
			return fmt.Errorf("describe group %s: %v", group, g.Err)
		}
		if g.State != "Stable" {
			return fmt.Errorf("group %s is %s, not Stable", group, orNone(g.State))
		}
		details, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		assigned := g.AssignedPartitions()
		var missing []string
		for _, t := range topics {
			d, ok := details[t]
			if !ok || d.Err != nil {
				return fmt.Errorf("topic %s: not found", t)
			}
			if n := countMissing(d.Partitions.Numbers(), assigned[t]); n > 0 {
				missing = append(missing, fmt.Sprintf("%s %d of %d", t, n, len(d.Partitions)))
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return fmt.Errorf("group %s: partitions not assigned: %s", group, strings.Join(missing, ", "))
		}
		return nil
	}
}

func countMissing(parts []int32, have map[int32]struct{}) int {
	n := 0
	for _, p := range parts {
		if _, ok := have[p]; !ok {
			n++
		}
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// lagged is a runner that reports its consumer group's lag.
type lagged interface {
	LagSource() telemetry.LagSource
}

// Healthy is a role that knows when it has been retrying for long (the
// projectors' Health).
type Healthy interface{ Health() error }

// checkHealth registers r's Health on o, when r has one.
func checkHealth(o *Observer, name string, r Runner) {
	if h, ok := r.(Healthy); ok {
		o.Check(name, func(context.Context) error { return h.Health() })
	}
}

// ObserveProjector registers the readiness of a standalone projector of
// kind (postgres or journal) on o — its group has every partition of its
// topics assigned, its store answers — and its consumer lag on /metrics.
// dsn or chAddr name the store. The clients it opens live until ctx ends.
func ObserveProjector(ctx context.Context, o *Observer, opts Options, kind string, r Runner, dsn, chAddr string) error {
	cl, err := WatchLag(opts.Kafka)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, cl.Close)
	o.Check("kafka", KafkaReady(cl))
	switch kind {
	case "postgres":
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return fmt.Errorf("postgres projector readiness: %w", err)
		}
		context.AfterFunc(ctx, pool.Close)
		o.Check("postgres", func(ctx context.Context) error {
			if err := pool.Ping(ctx); err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			return nil
		})
		o.Check("projector-postgres", GroupAssigned(cl, opts.Kafka.Group(postgres.DefaultGroup), opts.Kafka.Topics(postgres.Topics...)))
		checkHealth(o, "projector-postgres-retries", r)
		// The positions stored beside the rows are the truth: its Kafka
		// group commits nothing.
		telemetry.RegisterLag(cl, postgres.StoredLag(pool, opts.Kafka, postgres.DefaultGroup))
	case "journal":
		conn, err := journal.Open(chAddr, opts.ClickHouse)
		if err != nil {
			return err
		}
		context.AfterFunc(ctx, func() { conn.Close() })
		o.Check("clickhouse", func(ctx context.Context) error {
			if err := conn.Ping(ctx); err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			return nil
		})
		group := telemetry.LagSource{Group: opts.Kafka.Group("vmplane-projector-journal")}
		if l, ok := r.(lagged); ok {
			group = l.LagSource()
		}
		o.Check("projector-journal", GroupAssigned(cl, group.Group, opts.Kafka.Topics(journal.Topics...)))
		checkHealth(o, "projector-journal-retries", r)
		telemetry.RegisterLag(cl, group)
	default:
		return fmt.Errorf("unknown projector kind %q", kind)
	}
	return nil
}

// announcer is an agent that says how many of its hosts it announced.
type announcer interface {
	Group() string
	Announced() (announced, hosts int)
}

// AgentReady checks that every host of a has been announced since the
// agent last reached the brokers.
func AgentReady(a announcer) func(context.Context) error {
	return func(context.Context) error {
		if n, of := a.Announced(); n < of {
			return fmt.Errorf("%d of %d hosts announced", n, of)
		}
		return nil
	}
}

// ObserveAgent registers the readiness of a standalone agent on o — a
// broker answers, every host is announced — and the lag of its group on
// agent.commands.v1 on /metrics. The client it opens lives until ctx ends.
func ObserveAgent(ctx context.Context, o *Observer, opts Options, r Runner) error {
	a, ok := r.(announcer)
	if !ok {
		return errors.New("agent readiness: the runner is not an agent")
	}
	cl, err := WatchLag(opts.Kafka, telemetry.LagSource{Group: a.Group()})
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, cl.Close)
	o.Check("kafka", KafkaReady(cl))
	o.Check("agent-hosts", AgentReady(a))
	// Announced hosts say nothing of the commands: the agent's group must
	// hold every partition of agent.commands.v1.
	o.Check("agent-commands", GroupAssigned(cl, a.Group(), []string{opts.Kafka.Topic(schemas.TopicAgentCommands)}))
	return nil
}
