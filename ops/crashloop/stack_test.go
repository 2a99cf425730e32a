package crashloop

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// stackConfig says where the stack's parts live.
type stackConfig struct {
	bin       string // the vmplane binary
	dir       string // data and logs
	qemuDir   string // the QEMU guests' state dir: short, unique to this run
	dsn       string // Postgres database of the read models
	chAddr    string
	chDB      string
	ping      time.Duration
	simHosts  int
	qemuHosts int // 0: no QEMU agent
	// syncWrites runs the broker with --sync-writes (see flagSync).
	syncWrites bool
}

// stack is the roles of vmplane as separate processes on one embedded
// broker with a data directory.
type stack struct {
	cfg        stackConfig
	brokerAddr string
	httpAddr   string
	kcfg       kafka.Config
	roles      []*role
	byName     map[string]*role
	began      time.Time
	admin      *kgo.Client

	logMu sync.Mutex
	lines []string
	t     *testing.T
}

func (s *stack) clock() time.Duration { return time.Since(s.began) }

// logf logs through the test and keeps the line for the failure report.
func (s *stack) logf(format string, args ...any) {
	line := fmt.Sprintf("%7.2fs ", s.clock().Seconds()) + fmt.Sprintf(format, args...)
	s.logMu.Lock()
	s.lines = append(s.lines, line)
	s.logMu.Unlock()
	s.t.Log(line)
}

// buildVmplane builds ./ops/cmd/vmplane once, without the race detector
// (the processes are under test for crashes, not races, and stay fast).
func buildVmplane(t *testing.T, dir string) string {
	t.Helper()
	// go test puts the go that runs it first on the PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go build ./ops/cmd/vmplane: %v", err)
	}
	out := filepath.Join(dir, "vmplane")
	cmd := exec.Command(goBin, "build", "-o", out, "github.com/vmplane/vmplane/ops/cmd/vmplane")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./ops/cmd/vmplane: %v\n%s", err, b)
	}
	return out
}

// freeAddr returns a loopback address nobody listens on now, with a port
// below the kernel's ephemeral range (32768 up on Linux): a port from that
// range can be taken by an outgoing connection by the time a restarted role
// binds it again.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 1000 {
		port := 20000 + mrand.IntN(12000)
		if !ports.claim(port) {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return ln.Addr().String()
	}
	t.Fatal("no free port below 32000")
	return ""
}

// ports are those this test process handed out.
var ports = &portSet{m: map[int]bool{}}

type portSet struct {
	sync.Mutex
	m map[int]bool
}

func (p *portSet) claim(port int) bool {
	p.Lock()
	defer p.Unlock()
	if p.m[port] {
		return false
	}
	p.m[port] = true
	return true
}

// roleEnv is the environment of every role: ours without VMPLANE_*
// settings (every setting is a flag here), logs as text.
func roleEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VMPLANE_") {
			env = append(env, kv)
		}
	}
	return append(env, "VMPLANE_LOG_FORMAT=text")
}

// newStack defines the roles; start runs them.
func newStack(t *testing.T, cfg stackConfig) *stack {
	s := &stack{cfg: cfg, brokerAddr: freeAddr(t), httpAddr: freeAddr(t), byName: map[string]*role{}, began: time.Now(), t: t}
	s.kcfg = kafka.Config{Brokers: []string{s.brokerAddr}}
	env := roleEnv()
	add := func(name, group string, probe func(string) func(context.Context) error, args ...string) {
		metrics := freeAddr(t)
		r := &role{name: name, bin: cfg.bin, env: env, logPath: filepath.Join(cfg.dir, name+".log"), clock: s.clock,
			args: append(args, "--metrics-addr", metrics), group: group, members: s.groupMembers}
		r.probe = probe(metrics)
		s.roles = append(s.roles, r)
		s.byName[name] = r
	}
	readyz := func(metrics string) func(context.Context) error { return httpReady("http://" + metrics + "/readyz") }
	ping := cfg.ping.String()
	add("broker", "", func(string) func(context.Context) error { return s.brokerReady },
		"broker", "--addr", s.brokerAddr, "--data", filepath.Join(cfg.dir, "kafka"), fmt.Sprintf("--sync-writes=%t", cfg.syncWrites))
	for _, kind := range []string{"placement", "lease", "host", "host-relay", "vm"} {
		add("processor-"+kind, "vmplane-processor-"+kind, readyz, "processor", "--kind", kind, "--brokers", s.brokerAddr, "--instance", "crashloop", "--ping-interval", ping)
	}
	add("projector-postgres", postgres.DefaultGroup, readyz, "projector", "--kind", "postgres", "--brokers", s.brokerAddr, "--pg-dsn", cfg.dsn)
	add("projector-journal", "vmplane-projector-journal", readyz, "projector", "--kind", "journal", "--brokers", s.brokerAddr, "--clickhouse", cfg.chAddr, "--clickhouse-db", cfg.chDB)
	// The gateway's own /readyz (read model and broker) is on its API
	// address; its metrics address has no checks.
	add("gateway", "", func(string) func(context.Context) error { return httpReady("http://" + s.httpAddr + "/readyz") },
		"gateway", "--brokers", s.brokerAddr, "--pg-dsn", cfg.dsn, "--http", s.httpAddr, "--zone", "zone-1",
		"--clickhouse", cfg.chAddr, "--clickhouse-db", cfg.chDB)
	// The simulated hosts keep their VMs in a state dir, as a real host
	// keeps running its VMs while its agent restarts.
	add("agent-sim", "vmplane-agent-crashloop-sim", readyz, "agent", "--driver", "sim", "--brokers", s.brokerAddr, "--instance", "crashloop", "--prefix", "sim",
		"--zone", "zone-1", "--hosts", fmt.Sprint(cfg.simHosts), "--clusters", "2", "--ping-interval", ping, "--state-dir", filepath.Join(cfg.dir, "sim"))
	if cfg.qemuHosts > 0 {
		add("agent-qemu", "vmplane-agent-crashloop-qemu", readyz, "agent", "--driver", "qemu", "--brokers", s.brokerAddr, "--instance", "crashloop", "--prefix", "qemu",
			"--zone", "zone-1", "--hosts", fmt.Sprint(cfg.qemuHosts), "--state-dir", cfg.qemuDir, "--ping-interval", ping)
	}
	return s
}

// brokerReady lists every topic of the table through the broker.
func (s *stack) brokerReady(ctx context.Context) error {
	names := make([]string, len(schemas.Topics))
	for i, tp := range schemas.Topics {
		names[i] = tp.Name
	}
	listed, err := kadm.NewClient(s.admin).ListTopics(ctx, names...)
	if err != nil {
		return err
	}
	for _, n := range names {
		if d, ok := listed[n]; !ok || d.Err != nil {
			return fmt.Errorf("topic %s not listed", n)
		}
	}
	// The client may answer a metadata request from its cache; a listing
	// of offsets is always the broker's.
	ends, err := kadm.NewClient(s.admin).ListEndOffsets(ctx, names...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	return nil
}

// member is one member of a consumer group.
type member struct {
	id       string
	assigned int // partitions
}

// groupMembers returns the members of a consumer group that is Stable
// with every partition of the topics its members subscribe to assigned;
// otherwise an error says why not (with the members as they are).
func (s *stack) groupMembers(ctx context.Context, group string) ([]member, error) {
	described, err := kadm.NewClient(s.admin).DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	g, ok := described[group]
	if !ok || g.Err != nil {
		return nil, fmt.Errorf("describe group %s: %v", group, g.Err)
	}
	var ms []member
	subscribed := map[string]bool{}
	for _, m := range g.Members {
		n := 0
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				n += len(t.Partitions)
			}
		}
		ms = append(ms, member{id: m.MemberID, assigned: n})
		if c, ok := m.Join.AsConsumer(); ok {
			for _, t := range c.Topics {
				subscribed[t] = true
			}
		}
	}
	if g.State != "Stable" {
		return ms, fmt.Errorf("group %s is %s with %d members", group, orNone(g.State, "unknown"), len(g.Members))
	}
	if err := roles.GroupAssigned(s.admin, group, sortedKeys(subscribed))(ctx); err != nil {
		return ms, err
	}
	return ms, nil
}

// start runs the broker, then every other role, and waits until all are
// ready.
func (s *stack) start(ctx context.Context) error {
	var err error
	if s.admin, err = kgo.NewClient(s.kcfg.Opts(kgo.RetryTimeout(2 * time.Second))...); err != nil {
		return err
	}
	if err := s.roles[0].run(); err != nil {
		return err
	}
	if err := s.waitReady(ctx, []*role{s.roles[0]}, 30*time.Second); err != nil {
		return err
	}
	for _, r := range s.roles[1:] {
		if err := r.run(); err != nil {
			return err
		}
	}
	return s.waitReady(ctx, s.roles, 90*time.Second)
}

// notReady probes every role and returns why each that is not ready is not.
func (s *stack) notReady(ctx context.Context, rs []*role) map[string]string {
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			var why string
			if !r.isRunning() {
				why = "not running"
			} else if err := r.ready(pctx); err != nil {
				why = err.Error()
			}
			if why != "" {
				mu.Lock()
				out[r.name] = why
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

func (s *stack) waitReady(ctx context.Context, rs []*role, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		nr := s.notReady(ctx, rs)
		if len(nr) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not ready after %s: %s", d, describe(nr))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func describe(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s (%s)", k, oneLine(m[k], 300)))
	}
	return strings.Join(parts, "; ")
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// stop kills every role, then every QEMU guest left in the run's state
// dir: the guests are the agent's children today, and outlive it by design
// once guests are daemonised.
func (s *stack) stop() {
	for i := len(s.roles) - 1; i >= 0; i-- {
		s.roles[i].stop()
	}
	if s.admin != nil {
		s.admin.Close()
	}
	if s.cfg.qemuDir != "" {
		// The path is this run's own (a fresh temp dir), so the pattern
		// matches only guests this test started.
		_ = exec.Command("pkill", "-KILL", "-f", s.cfg.qemuDir+"/").Run()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && len(qemuGuests(s.cfg.qemuDir)) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// freeze stops (SIGSTOP) or continues (SIGCONT) the named roles.
func (s *stack) freeze(names []string, stop bool) error {
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	var errs []string
	for _, n := range names {
		if err := s.byName[n].signal(sig); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (s *stack) roleNames() []string {
	out := make([]string, len(s.roles))
	for i, r := range s.roles {
		out[i] = r.name
	}
	return out
}
