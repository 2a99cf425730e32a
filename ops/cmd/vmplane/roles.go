package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/ops/dev"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

func runDev(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("dev")
	varDir := f.str("var", "VMPLANE_VAR", "var", "directory for the stack's data")
	kafkaAddr := f.str("kafka-addr", "VMPLANE_KAFKA_ADDR", "127.0.0.1:9092", "listen address of the embedded broker")
	httpAddr := f.str("http", "VMPLANE_HTTP_ADDR", "127.0.0.1:8080", "listen address of the gateway")
	dsn := f.str("pg-dsn", "VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "Postgres server (a local one is started under --var when none answers)")
	ch := f.str("clickhouse", "VMPLANE_CH_ADDR", "127.0.0.1:9000", "ClickHouse native address (a local one is started under --var when none answers)")
	cha := f.clickhouse()
	hosts := f.num("hosts", "VMPLANE_SIM_HOSTS", 4, "simulated hosts (one zone, two clusters)")
	database := f.str("database", "VMPLANE_DATABASE", "vmplane", "Postgres and ClickHouse database of this stack's read models and journal")
	ping := f.dur("ping-interval", "VMPLANE_PING_INTERVAL", 5*time.Second, "agent ping and report interval")
	qemuHosts := f.num("qemu-hosts", "VMPLANE_QEMU_HOSTS", 0, "hosts whose VMs are real QEMU guests, served by a second agent (offering qemu-small)")
	simControl := f.str("sim-control", "VMPLANE_SIM_CONTROL", "127.0.0.1:8081", "loopback address of the sim driver's control API (empty: off)")
	simLatency := f.dur("sim-latency", "VMPLANE_SIM_LATENCY", 0, "how long each operation of the sim hosts takes (start, stop, migrate…), e.g. 5s to watch or cancel a job while its agent works; 0: at once")
	secure := f.Bool("secure", os.Getenv("VMPLANE_DEV_SECURE") == "true", "run the broker with SASL/SCRAM and ACLs, one principal per role (env VMPLANE_DEV_SECURE)")
	if err := f.Parse(args); err != nil {
		return err
	}
	abs, err := filepath.Abs(*varDir)
	if err != nil {
		return err
	}
	access, err := cha.access()
	if err != nil {
		return err
	}
	st, err := dev.Start(ctx, dev.Config{VarDir: abs, KafkaAddr: *kafkaAddr, HTTPAddr: *httpAddr, PostgresDSN: *dsn, Database: *database,
		ClickHouse: *ch, ClickHouseAccess: access, Hosts: *hosts, PingInterval: *ping, QemuHosts: *qemuHosts, SimControl: *simControl, SimLatency: sim.Every(*simLatency), Secure: *secure, Logger: log})
	if err != nil {
		return err
	}
	fmt.Print(st.Banner())
	if metricsURL != "" {
		fmt.Printf("  metrics     %s (every role; /healthz, /readyz beside it)\n", metricsURL)
	}
	if err := st.Observe(ctx, observer); err != nil { // telemetry:
		log.Warn("observing the stack", "err", err)
	}
	<-ctx.Done()
	fmt.Println("\nstopping vmplane dev…")
	st.Stop()
	return nil
}

func runBroker(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("broker")
	addr := f.str("addr", "VMPLANE_KAFKA_ADDR", "127.0.0.1:9092", "listen address")
	data := f.str("data", "VMPLANE_KAFKA_DATA", "var/kafka", "data directory (the log survives restarts)")
	sync := f.Bool("sync-writes", os.Getenv("VMPLANE_KAFKA_SYNC_WRITES") != "false",
		"fsync every produce before answering it, so an acknowledged record survives a power loss (env VMPLANE_KAFKA_SYNC_WRITES=false turns it off)")
	if err := f.Parse(args); err != nil {
		return err
	}
	start := kafka.StartBroker
	if !*sync {
		start = kafka.StartBrokerUnsynced
	}
	// /readyz answers ready once the topics exist: the other roles need
	// them, and a listening broker alone is not that.
	var topicsMade atomic.Bool
	observer.Check("broker", func(context.Context) error {
		if !topicsMade.Load() {
			return errors.New("topics not created yet")
		}
		return nil
	})
	b, err := start(*addr, *data)
	if err != nil {
		return err
	}
	defer b.Close()
	cl, err := kgo.NewClient(kafka.Config{Brokers: b.Addrs()}.Opts()...)
	if err != nil {
		return err
	}
	// One broker: every topic has one replica. The prefix of a shared
	// cluster has no use here.
	err = kafka.Config{}.EnsureTopics(ctx, cl, schemas.Topics, kafka.TopicOptions{Replication: 1})
	cl.Close()
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	topicsMade.Store(true)
	log.Info("broker up", "addrs", b.Addrs(), "data", *data)
	<-ctx.Done()
	return nil
}

func runProcessor(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("processor")
	kind := f.str("kind", "VMPLANE_PROCESSOR", "", strings.Join(roles.ProcessorKinds, ", "))
	k := f.kafka()
	inst := f.instance()
	ping := f.settings()
	gc := f.gc()
	if err := f.Parse(args); err != nil {
		return err
	}
	if err := gc.apply(); err != nil {
		return err
	}
	kcfg, err := k.config()
	if err != nil {
		return err
	}
	p, err := roles.NewProcessor(*kind, roles.Options{Kafka: kcfg, InstanceID: *inst, Logger: log}, roles.Settings{PingInterval: *ping}, engine.SystemClock{})
	if err != nil {
		return err
	}
	observer.Check("processor-"+*kind, roles.ProcessorReady(p)) // telemetry:
	watchLag(kcfg, log, roles.ProcessorLag(kcfg, *kind))        // telemetry:
	return p.Run(ctx)
}

func runProjector(ctx context.Context, args []string, log *slog.Logger) error {
	if len(args) > 0 && args[0] == "rebuild" {
		return runRebuild(ctx, args[1:], log)
	}
	f := newFlags("projector")
	kind := f.str("kind", "VMPLANE_PROJECTOR", "", "postgres or journal")
	k := f.kafka()
	inst := f.instance()
	dsn := f.str("pg-dsn", "VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/vmplane?sslmode=disable", "Postgres database of the read models")
	ch := f.str("clickhouse", "VMPLANE_CH_ADDR", "127.0.0.1:9000", "ClickHouse native address")
	chdb := f.str("clickhouse-db", "VMPLANE_CH_DATABASE", "vmplane", "ClickHouse database")
	cha := f.clickhouse()
	gc := f.gc()
	if err := f.Parse(args); err != nil {
		return err
	}
	if err := gc.apply(); err != nil {
		return err
	}
	kcfg, err := k.config()
	if err != nil {
		return err
	}
	access, err := cha.access()
	if err != nil {
		return err
	}
	o := roles.Options{Kafka: kcfg, ClickHouse: access, InstanceID: *inst, Logger: log}
	var r roles.Runner
	switch *kind {
	case "postgres":
		if err := postgres.Migrate(ctx, *dsn); err != nil {
			return err
		}
		r, err = roles.NewPostgresProjector(o, *dsn)
	case "journal":
		r, err = roles.NewJournalProjector(o, *ch, *chdb)
	default:
		return fmt.Errorf("unknown projector kind %q (want postgres or journal)", *kind)
	}
	if err != nil {
		return err
	}
	if err := roles.ObserveProjector(ctx, observer, o, *kind, r, *dsn, *ch); err != nil { // telemetry:
		log.Warn("projector readiness and lag not observed", "err", err)
	}
	return r.Run(ctx)
}

func runGateway(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("gateway")
	k := f.kafka()
	dsn := f.str("pg-dsn", "VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/vmplane?sslmode=disable", "Postgres database of the read models")
	addr := f.str("http", "VMPLANE_HTTP_ADDR", "127.0.0.1:8080", "listen address")
	zone := f.str("zone", "VMPLANE_ZONE", "zone-1", "zone new VMs are deployed in")
	ch := f.str("clickhouse", "VMPLANE_CH_ADDR", "127.0.0.1:9000", "ClickHouse native address of the history (empty: no history routes)")
	chdb := f.str("clickhouse-db", "VMPLANE_CH_DATABASE", "vmplane", "ClickHouse database")
	cha := f.clickhouse()
	rate := f.num("rate", "VMPLANE_RATE", 200, "requests per second of each API key (burst twice that; -1: no limit)")
	anon := f.num("anon-rate", "VMPLANE_ANON_RATE", 20, "refused (401) requests per second of each client address before it gets 429 (burst 100); raise it behind a proxy")
	streams := f.num("max-streams", "VMPLANE_MAX_STREAMS", 16, "event streams and long-polls one API key may hold open (-1: no limit)")
	ping := f.settings() // the host processors', for how stale a host's last_ping_at may be
	if err := f.Parse(args); err != nil {
		return err
	}
	kcfg, err := k.config()
	if err != nil {
		return err
	}
	access, err := cha.access()
	if err != nil {
		return err
	}
	if err := postgres.Migrate(ctx, *dsn); err != nil {
		return err
	}
	gcfg := gateway.Config{Addr: *addr, ZoneID: *zone, RatePerSecond: float64(*rate), RateBurst: 2 * *rate,
		AnonRatePerSecond: float64(*anon), MaxStreamsPerKey: *streams, PingInterval: *ping}
	if *ch != "" {
		h, err := roles.OpenHistory(*ch, *chdb, access)
		if err != nil {
			return err
		}
		defer h.Close()
		gcfg.History = h
	}
	g, err := roles.NewGateway(roles.Options{Kafka: kcfg, Logger: log}, *dsn, gcfg)
	if err != nil {
		return err
	}
	return g.Run(ctx)
}

func runAgent(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("agent")
	k := f.kafka()
	inst := f.instance()
	ping := f.settings()
	driver := f.str("driver", "VMPLANE_AGENT_DRIVER", "sim", "hypervisor driver: sim (in-memory hosts) or qemu (real QEMU guests on this machine)")
	prefix := f.str("prefix", "VMPLANE_SIM_PREFIX", "", "host id prefix (default sim, or qemu with --driver qemu)")
	zone := f.str("zone", "VMPLANE_ZONE", "zone-1", "zone of the hosts")
	hosts := f.num("hosts", "VMPLANE_SIM_HOSTS", 4, "hosts served")
	clusters := f.num("clusters", "VMPLANE_SIM_CLUSTERS", 2, "clusters the simulated hosts are spread over (qemu hosts form one cluster)")
	stateDir := f.str("state-dir", "VMPLANE_QEMU_DIR", "", "what outlives the agent, with its answers to commands: qemu: the guests' disks and QMP sockets and pid files, required, kept across restarts (keep it short); sim: the simulated hosts' VMs (default: memory only)")
	templates := f.str("templates", "VMPLANE_TEMPLATES_DIR", "", "qemu: the guests' templates, <dir>/<template id>/ with disk.qcow2, vmlinuz, initrd.img (vmplane guest-image writes one)")
	accel := f.str("accel", "VMPLANE_QEMU_ACCEL", "", "qemu: accelerator, kvm or tcg (default tcg)")
	stopTimeout := f.dur("stop-timeout", "VMPLANE_QEMU_STOP_TIMEOUT", 0, "qemu: how long a graceful stop waits for the guest after the ACPI power button (default 30s)")
	simControl := f.str("sim-control", "VMPLANE_SIM_CONTROL", "", "sim: listen address of the simulator's control API (crash a host, pause a VM behind vmplane's back); loopback only; empty: off")
	if err := f.Parse(args); err != nil {
		return err
	}
	kcfg, err := k.config()
	if err != nil {
		return err
	}
	o := roles.Options{Kafka: kcfg, InstanceID: *inst, Logger: log}
	switch *driver {
	case "sim":
		if *prefix == "" {
			*prefix = "sim"
		}
		a, err := roles.NewSimAgent(o, roles.SimLayout{Prefix: *prefix, Zone: *zone, Pods: 1, Clusters: *clusters, Hosts: *hosts, StateDir: *stateDir}, roles.Settings{PingInterval: *ping})
		if err != nil {
			return err
		}
		if *simControl != "" {
			stop, err := roles.ServeSimControl(*simControl, a.Driver, log)
			if err != nil {
				return err
			}
			defer stop()
		}
		if err := roles.ObserveAgent(ctx, observer, o, a); err != nil { // telemetry:
			log.Warn("agent readiness and lag not observed", "err", err)
		}
		return a.Run(ctx)
	case "qemu":
		if *prefix == "" {
			*prefix = "qemu"
		}
		if *stateDir == "" {
			// The guests outlive the agent and the next one adopts them from
			// this directory: a temporary one would lose them.
			return fmt.Errorf("agent --driver qemu needs --state-dir (VMPLANE_QEMU_DIR): the guests' directories, kept across restarts")
		}
		a, err := roles.NewQemuAgent(o, roles.QemuLayout{Prefix: *prefix, Zone: *zone, Hosts: *hosts, StateDir: *stateDir,
			Templates: *templates, Accel: *accel, StopTimeout: *stopTimeout}, roles.Settings{PingInterval: *ping})
		if err != nil {
			return err
		}
		if err := roles.ObserveAgent(ctx, observer, o, a); err != nil { // telemetry:
			log.Warn("agent readiness and lag not observed", "err", err)
		}
		return a.Run(ctx)
	}
	return fmt.Errorf("unknown agent driver %q (want sim or qemu)", *driver)
}

// runRebuild is `vmplane projector rebuild --target postgres`: the read
// models replayed from offset 0 into a fresh schema, swapped in when done.
// Stop the Postgres projectors first and start them after: they read their
// positions only when they get their partitions.
func runRebuild(ctx context.Context, args []string, log *slog.Logger) error {
	f := newFlags("projector rebuild")
	target := f.str("target", "VMPLANE_REBUILD_TARGET", "postgres", "what to rebuild: postgres")
	k := f.kafka()
	dsn := f.str("pg-dsn", "VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/vmplane?sslmode=disable", "Postgres database of the read models")
	gc := f.gc()
	if err := f.Parse(args); err != nil {
		return err
	}
	if *target != "postgres" {
		return fmt.Errorf("rebuild --target %q: only postgres is supported (the journal absorbs a replay: reset its group instead)", *target)
	}
	if err := gc.apply(); err != nil {
		return err
	}
	kcfg, err := k.config()
	if err != nil {
		return err
	}
	st, err := postgres.Rebuild(ctx, kcfg, *dsn)
	if err != nil {
		return err
	}
	log.Info("read models rebuilt", "records", st.Records, "rows", st.Rows, "took", st.Took, "old_schema", st.OldSchema)
	return nil
}
