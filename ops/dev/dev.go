// Package dev is the one-process dev stack behind `vmplane dev` and
// `make run`: an embedded broker with its data under var/kafka, Postgres
// and ClickHouse (the configured ones when they answer, else local servers
// with their data under var/), every processor and projector, the gateway
// and a sim agent. It seeds the offerings and the admin API key. It owns
// no logic of its own beyond starting, seeding and stopping.
package dev

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/pgserver"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/producers/agent/driver/qemu/linux"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// Config of the dev stack; every field has a flag and an environment variable.
type Config struct {
	VarDir      string // var
	KafkaAddr   string // 127.0.0.1:9092
	HTTPAddr    string // 127.0.0.1:8080
	PostgresDSN string // postgres://postgres@127.0.0.1:5432/postgres
	ClickHouse  string // 127.0.0.1:9000
	// ClickHouseAccess logs in to a ClickHouse found at ClickHouse; one
	// the stack starts has the passwordless default user on loopback.
	ClickHouseAccess chserver.Access
	Database         string        // Postgres and ClickHouse database (vmplane)
	Hosts            int           // sim hosts (4)
	PingInterval     time.Duration // agent ping interval (5 s in dev)
	// QemuHosts adds a second agent serving this many hosts whose VMs are
	// real QEMU guests (zone-1, their own cluster, tag qemu), and the
	// offering qemu-small that is placed on them only. 0: none.
	QemuHosts int
	// SimControl is the loopback address of the sim driver's control API
	// (127.0.0.1:8081 in dev): crash a host, pause a VM behind vmplane's
	// back. Empty: not served.
	SimControl string
	// Secure runs the broker with SASL/SCRAM and ACLs: each role connects
	// as its own principal (kafka.Principal*) with the least rights; the
	// passwords are in var/dev/kafka-passwords.json.
	Secure bool
	// SimLatency is how long each operation of the sim hosts takes (zero:
	// at once); a test that watches a job in flight slows them down.
	SimLatency sim.Durations
	Logger     *slog.Logger
}

// Stack is a running dev stack.
type Stack struct {
	cfg    Config
	log    *slog.Logger
	broker *kafka.Broker
	pg     pgserver.Server
	ch     chserver.Server
	// chAccess logs in to ch: Config.ClickHouseAccess for a server found,
	// nothing for one the stack started.
	chAccess chserver.Access
	kcfg     kafka.Config
	dsn      string
	cancel   context.CancelFunc
	// agentCancel stops the agent ahead of the rest.
	agentCancel context.CancelFunc
	agentDone   chan struct{}
	simStop     func()
	simHost     string // a sim host, for the banner's example
	qemuDir     string
	wg          sync.WaitGroup
	procs       []roles.Processor
	projectors  map[string]roles.Healthy
	// passwords are the principals' on a secure broker (Config.Secure).
	passwords map[string]string
	AdminKey  string
}

// Start brings the stack up and returns once the gateway answers.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Database == "" {
		cfg.Database = "vmplane"
	}
	s := &Stack{cfg: cfg, log: cfg.Logger}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if err := os.MkdirAll(filepath.Join(cfg.VarDir, "dev"), 0o755); err != nil {
		return nil, err
	}

	// A new log means the projections of any earlier log are stale (their
	// stored offsets point into a log that is gone): they are dropped.
	_, statErr := os.Stat(filepath.Join(cfg.VarDir, "kafka"))
	freshLog := os.IsNotExist(statErr)
	if err := s.startKafka(ctx); err != nil {
		return nil, err
	}
	// Postgres and ClickHouse: the configured servers, or local ones.
	drop, err := s.startPostgres(ctx, freshLog)
	if err != nil {
		return nil, err
	}
	if err := s.startClickHouse(ctx, drop); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	o := roles.Options{Kafka: s.kcfg, InstanceID: "dev", Logger: s.log}
	settings := roles.Settings{PingInterval: cfg.PingInterval}
	if err := s.startRoles(runCtx, o, settings); err != nil {
		return nil, err
	}
	if err := s.startAgents(runCtx, o, settings, freshLog); err != nil {
		return nil, err
	}

	if err := s.seed(ctx); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, "http://"+cfg.HTTPAddr+"/healthz", 30*time.Second); err != nil {
		return nil, err
	}
	// The agent announces its hosts again at every start (and said goodbye at
	// the last stop): wait until they are Up, so the first deploy finds them.
	if err := s.waitHostsUp(ctx, cfg.Hosts+cfg.QemuHosts, 30*time.Second); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// startKafka starts the embedded broker, which keeps its log under
// var/kafka, and creates the topics.
func (s *Stack) startKafka(ctx context.Context) error {
	var secure []kfake.Opt
	if s.cfg.Secure {
		var err error
		if s.passwords, err = kafkaPasswords(s.cfg.VarDir); err != nil {
			return err
		}
		secure = kafka.SecureOpts(s.passwords)
	}
	b, err := kafka.StartBroker(s.cfg.KafkaAddr, filepath.Join(s.cfg.VarDir, "kafka"), secure...)
	if err != nil {
		return err
	}
	s.broker = b
	s.kcfg = kafka.Config{Brokers: b.Addrs()}
	if s.cfg.Secure {
		s.kcfg.User, s.kcfg.Password = kafka.PrincipalAdmin, s.passwords[kafka.PrincipalAdmin]
	}
	admin, err := kgo.NewClient(s.kcfg.Opts()...)
	if err != nil {
		return err
	}
	err = s.kcfg.EnsureTopics(ctx, admin, schemas.Topics, kafka.TopicOptions{Replication: 1})
	admin.Close()
	return err
}

// as gives a role its own principal on a secure broker.
func (s *Stack) as(o roles.Options, principal string) roles.Options {
	if s.cfg.Secure {
		o.Kafka.User, o.Kafka.Password = principal, s.passwords[principal]
	}
	return o
}

// startPostgres finds or starts Postgres and makes the read models'
// database, dropped first when it projects no log of this stack (drop
// then says the journal's goes too).
func (s *Stack) startPostgres(ctx context.Context, freshLog bool) (drop bool, err error) {
	db := s.cfg.Database
	s.pg, err = pgserver.Ensure(ctx, s.cfg.PostgresDSN, s.cfg.VarDir, s.log)
	if err != nil {
		return false, fmt.Errorf("postgres: %w", err)
	}
	drop, err = claimDatabase(ctx, s.pg.DSN(), db, s.cfg.VarDir, freshLog)
	if err != nil {
		return false, err
	}
	if drop {
		s.log.Info("dropping read models that project no log of this stack", "database", db)
		if err := pgserver.DropDatabase(ctx, s.pg.DSN(), db); err != nil {
			return false, err
		}
	}
	s.dsn, err = pgserver.EnsureDatabase(ctx, s.pg.DSN(), db)
	if err != nil {
		return false, fmt.Errorf("postgres: %w", err)
	}
	if err := recordOwner(ctx, s.dsn, s.cfg.VarDir); err != nil {
		return false, err
	}
	return drop, postgres.Migrate(ctx, s.dsn)
}

// startClickHouse finds or starts ClickHouse and makes the journal's
// database, dropped first when drop is set.
func (s *Stack) startClickHouse(ctx context.Context, drop bool) error {
	// Detached: a ClickHouse the stack starts outlives a crash of the
	// stack, and the next start finds it answering instead of waiting for
	// it to shut down and starting another (30 s after a kill -9). Stop
	// stops it.
	var err error
	s.ch, err = chserver.Ensure(ctx, s.cfg.ClickHouse, s.cfg.VarDir, s.log, chserver.Detached(), chserver.Login(s.cfg.ClickHouseAccess))
	if err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	if !s.ch.Started() {
		s.chAccess = s.cfg.ClickHouseAccess
	}
	if drop {
		if err := s.chAccess.DropDatabase(ctx, s.ch.Addr(), s.cfg.Database); err != nil {
			return err
		}
	}
	if err := s.chAccess.EnsureDatabase(ctx, s.ch.Addr(), s.cfg.Database); err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	return nil
}

// startRoles runs every processor, both projectors and the gateway until
// runCtx ends.
func (s *Stack) startRoles(runCtx context.Context, o roles.Options, settings roles.Settings) error {
	o.ClickHouse = s.chAccess
	for _, kind := range roles.ProcessorKinds {
		p, err := roles.NewProcessor(kind, s.as(o, kafka.PrincipalProcessor), settings, engine.SystemClock{})
		if err != nil {
			return err
		}
		s.procs = append(s.procs, p)
		s.run(runCtx, "processor-"+kind, p)
	}
	pgp, err := roles.NewPostgresProjector(s.as(o, kafka.PrincipalProjector), s.dsn)
	if err != nil {
		return err
	}
	s.run(runCtx, "projector-postgres", pgp)
	s.projectors = map[string]roles.Healthy{"projector-postgres": pgp}
	jp, err := roles.NewJournalProjector(s.as(o, kafka.PrincipalProjector), s.ch.Addr(), s.cfg.Database)
	if err != nil {
		return err
	}
	s.run(runCtx, "projector-journal", jp)
	s.projectors["projector-journal"] = jp
	hist, err := roles.OpenHistory(s.ch.Addr(), s.cfg.Database, s.chAccess)
	if err != nil {
		return err
	}
	go func() { <-runCtx.Done(); hist.Close() }()
	gw, err := roles.NewGateway(s.as(o, kafka.PrincipalGateway), s.dsn, gateway.Config{Addr: s.cfg.HTTPAddr, Logger: s.log, History: hist, Ready: s.projectorsHealth,
		PingInterval: s.cfg.PingInterval})
	if err != nil {
		return err
	}
	s.run(runCtx, "gateway", gw)
	return nil
}

// startAgents runs the sim agent, the QEMU agent when there are QEMU
// hosts, and the sim driver's control API when configured.
func (s *Stack) startAgents(runCtx context.Context, o roles.Options, settings roles.Settings, freshLog bool) error {
	// The simulated hosts and the agent's answers live under var/sim, so a
	// stack killed and started again finds its VMs as they were; a new log
	// knows none of them.
	simDir := filepath.Join(s.cfg.VarDir, "sim")
	if freshLog {
		if err := os.RemoveAll(simDir); err != nil {
			return fmt.Errorf("drop the sim hosts of an earlier log: %w", err)
		}
	}
	ag, err := roles.NewSimAgent(s.as(o, kafka.PrincipalAgent), roles.SimLayout{Prefix: "host", Zone: "zone-1", Pods: 1, Clusters: 2, Hosts: s.cfg.Hosts, StateDir: simDir, Latency: s.cfg.SimLatency}, settings)
	if err != nil {
		return err
	}
	agents := []roles.Runner{ag}
	if s.cfg.QemuHosts > 0 {
		s.qemuDir, err = qemuDir(s.cfg.VarDir)
		if err != nil {
			return err
		}
		templates := s.qemuTemplates(runCtx)
		qa, err := roles.NewQemuAgent(s.as(o, kafka.PrincipalAgent), roles.QemuLayout{Prefix: "qemu", Zone: "zone-1", Cluster: "qemu-cluster",
			Hosts: s.cfg.QemuHosts, Tags: []string{QemuTag}, StateDir: s.qemuDir, Templates: templates,
			Accel: os.Getenv("VMPLANE_QEMU_ACCEL"), QuitGuestsOnStop: true}, settings)
		if err != nil {
			return err
		}
		agents = append(agents, qa)
	}
	if s.cfg.SimControl != "" {
		if hs := ag.Driver.Hosts(); len(hs) > 0 {
			s.simHost = hs[0].ID
		}
		s.simStop, err = roles.ServeSimControl(s.cfg.SimControl, ag.Driver, s.log)
		if err != nil {
			return err
		}
	}
	s.superviseAgents(runCtx, agents)
	return nil
}

// superviseAgents runs the agents until runCtx ends or Stop stops them
// ahead of the rest, so that their goodbyes reach the host processor and
// the read model while those still run; agentDone closes when all are
// gone.
func (s *Stack) superviseAgents(runCtx context.Context, agents []roles.Runner) {
	agentCtx, agentCancel := context.WithCancel(runCtx)
	s.agentCancel = agentCancel
	s.agentDone = make(chan struct{})
	var agentsWG sync.WaitGroup
	for i, a := range agents {
		agentsWG.Add(1)
		go func() {
			defer agentsWG.Done()
			roles.Supervise(agentCtx, s.log, fmt.Sprintf("agent-%d", i), a)
		}()
	}
	go func() {
		agentsWG.Wait()
		close(s.agentDone)
	}()
}

func (s *Stack) run(ctx context.Context, name string, r roles.Runner) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		roles.Supervise(ctx, s.log, name, r)
	}()
}

// projectorsHealth is the gateway's readiness beyond Kafka: its read
// model and history are stale while a projector retries for long.
func (s *Stack) projectorsHealth(context.Context) error {
	var errs []error
	for name, p := range s.projectors {
		if err := p.Health(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Ready reports whether every processor has restored its state.
func (s *Stack) Ready() bool {
	for _, p := range s.procs {
		if !p.Ready() {
			return false
		}
	}
	return true
}

// Kafka returns the configuration to reach the stack's broker.
func (s *Stack) Kafka() kafka.Config { return s.kcfg }

// PostgresDSN returns the DSN of the read models.
func (s *Stack) PostgresDSN() string { return s.dsn }

// ClickHouseAddr returns the native address of ClickHouse.
func (s *Stack) ClickHouseAddr() string { return s.ch.Addr() }

// Stop shuts every role down, then the broker and the servers it started.
func (s *Stack) Stop() {
	if s.simStop != nil {
		s.simStop()
	}
	if s.agentCancel != nil {
		s.agentCancel()
		<-s.agentDone
		time.Sleep(500 * time.Millisecond) // let the goodbye be projected
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.broker != nil {
		s.broker.Close()
	}
	s.ch.Stop()
	// One that an earlier, killed run started under var/ is this stack's
	// too (Ensure found it answering and took it as it is).
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := chserver.StopDir(stopCtx, s.cfg.VarDir); err != nil {
		s.log.Warn("stopping the clickhouse under var/", "err", err)
	}
	cancel()
	s.pg.Stop()
	if s.qemuDir != "" && !strings.HasPrefix(s.qemuDir, s.cfg.VarDir) {
		if err := os.RemoveAll(s.qemuDir); err != nil {
			s.log.Warn("removing the qemu guests' directory", "dir", s.qemuDir, "err", err)
		}
	}
}

// QemuTag is the host tag of the dev stack's QEMU hosts; QemuOffering
// requires it, so it is placed on them only.
const QemuTag = "qemu"

// QemuOffering is seeded when the stack has QEMU hosts: a guest small
// enough for many to run on a laptop.
// The Debian kernel of its guests boots in 96 MiB, not in 64.
var QemuOffering = schemas.Offering{ID: "off-qemu-small", Name: "qemu-small", CPU: 1, MemoryMB: 128, HostTags: []string{QemuTag}}

// QemuTemplate is the template the dev stack's QEMU hosts boot: a Debian
// kernel and a busybox initramfs (package linux), in
// <VarDir>/templates/tiny-linux/, built at the stack's start when missing.
const QemuTemplate = "tiny-linux"

// qemuTemplates builds QemuTemplate under <VarDir>/templates when it is
// not there and returns that directory. Without it (ops/install.sh not
// run) the stack still serves VMs that have no template, and says why the
// others cannot start.
func (s *Stack) qemuTemplates(ctx context.Context) string {
	dir := filepath.Join(s.cfg.VarDir, "templates")
	if err := linux.Ensure(ctx, linux.Config{}, filepath.Join(dir, QemuTemplate)); err != nil {
		s.log.Warn("qemu guest template not built: VMs of template "+QemuTemplate+" cannot start", "err", err)
	}
	return dir
}

// qemuDir is where the QEMU guests live: var/qemu when its socket paths
// (dir/<vm uuid>/<host>-ext.qmp) fit the 107 bytes of a unix socket name,
// else a directory under the temp dir named for varDir, the same at every
// start. Guests outlive the stack when it is killed, and the next start
// adopts them from there, so the directory is kept, also with a new Kafka
// log: a guest whose VM that log does not know is reported as an
// UnmanagedGuest alert, never deleted from under a running process.
func qemuDir(varDir string) (string, error) {
	dir := filepath.Join(varDir, "qemu")
	if len(dir)+len("/12345678-1234-1234-1234-123456789012/qemu-99-ext.qmp") >= 100 {
		sum := fnv.New32a()
		sum.Write([]byte(varDir))
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("vmq-%08x", sum.Sum32()))
	}
	return dir, os.MkdirAll(dir, 0o700)
}

// SimControl returns the address of the sim driver's control API, or "".
func (s *Stack) SimControl() string { return s.cfg.SimControl }

// Banner is what `vmplane dev` prints once the stack is up.
func (s *Stack) Banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nvmplane dev is up\n")
	fmt.Fprintf(&b, "  gateway     http://%s\n", s.cfg.HTTPAddr)
	fmt.Fprintf(&b, "  kafka       %s (data in %s)\n", strings.Join(s.kcfg.Brokers, ","), filepath.Join(s.cfg.VarDir, "kafka"))
	fmt.Fprintf(&b, "  postgres    %s\n", s.dsn)
	fmt.Fprintf(&b, "  clickhouse  %s (database %s)\n", s.ch.Addr(), s.cfg.Database)
	if s.cfg.QemuHosts > 0 {
		fmt.Fprintf(&b, "  qemu hosts  %d (guests in %s; offering %s)\n", s.cfg.QemuHosts, s.qemuDir, QemuOffering.Name)
	}
	if s.cfg.SimControl != "" {
		fmt.Fprintf(&b, "  sim control http://%s (e.g. curl -X POST http://%s/hosts/%s/crash)\n", s.cfg.SimControl, s.cfg.SimControl, s.simHost)
	}
	fmt.Fprintf(&b, "  admin key   %s (in %s)\n\n", s.AdminKey, filepath.Join(s.cfg.VarDir, "dev", "admin-key"))
	// vmctl reads its API and key from the environment: the export line
	// points it at this stack whatever --http and --var say.
	keyFile := filepath.Join(s.cfg.VarDir, "dev", "admin-key")
	fmt.Fprintf(&b, "Try:\n  export VMPLANE_API=http://%s VMPLANE_API_KEY=$(cat %s)\n", s.cfg.HTTPAddr, keyFile)
	fmt.Fprintf(&b, "  go run ./ops/cmd/vmctl vm deploy --name web-1 --offering small --wait\n")
	fmt.Fprintf(&b, "  curl -s -H \"Authorization: Bearer $VMPLANE_API_KEY\" $VMPLANE_API/v1/hosts\n\nCtrl-C stops everything; the data stays in %s.\n",
		s.cfg.VarDir)
	return b.String()
}
