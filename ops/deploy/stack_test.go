package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
)

// stack is every instance of the kit as a process of its own, started as
// its unit would start it: its ExecStart, with the environment of its
// EnvironmentFile= lines read from the installed /etc/vmplane, changed only
// where the test must (stack.environ says where).
type stack struct {
	t     *testing.T
	root  string
	bin   string
	k     *kit
	db    map[string]string // VMPLANE_PG_DSN, VMPLANE_CH_ADDR, VMPLANE_CH_DATABASE of the test
	ports map[int]bool      // handed out
	procs []*proc
	// broker is the embedded broker's address, api the gateway's.
	broker, api string
}

// proc is one running instance.
type proc struct {
	in      instance
	cmd     *exec.Cmd
	log     string
	env     map[string]string
	metrics string // VMPLANE_METRICS_ADDR as the process has it
	exited  chan struct{}
	status  string
}

func newStack(t *testing.T, root string, k *kit, db map[string]string) *stack {
	return &stack{t: t, root: root, bin: filepath.Join(root, binary), k: k, db: db, ports: map[int]bool{}}
}

// start runs the broker, waits for its /readyz (topics made), then every
// other instance at once, and waits for all of them to be ready.
func (s *stack) start() {
	s.t.Cleanup(s.stop)
	var rest []instance
	for _, in := range s.k.instances {
		if in.role() == "broker" {
			s.waitReady(s.run(in))
			continue
		}
		rest = append(rest, in)
	}
	if s.broker == "" {
		s.t.Fatal("the kit has no broker unit")
	}
	var ps []*proc
	for _, in := range rest {
		ps = append(ps, s.run(in))
	}
	for _, p := range ps {
		s.waitReady(p)
	}
}

// run starts an instance.
func (s *stack) run(in instance) *proc {
	s.t.Helper()
	env, err := in.env(filepath.Join(s.root, etcDir))
	if err != nil {
		s.t.Fatal(err)
	}
	changed := s.environ(in, env)
	argv := in.argv()
	if argv[0] != binary {
		s.t.Fatalf("%s runs %s, not %s", in.name, argv[0], binary)
	}
	logDir := filepath.Join(s.root, "var/log/vmplane")
	mkdir(s.t, logDir)
	p := &proc{in: in, env: env, metrics: env["VMPLANE_METRICS_ADDR"], log: filepath.Join(logDir, strings.TrimSuffix(in.name, ".service")+".log"),
		exited: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(s.bin, argv[1:]...)
	p.cmd.Env = environ(env)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Its own process group; killed with the test process if that dies
	// without cleaning up.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", in.name, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.status = fmt.Sprint(err)
		close(p.exited)
	}()
	s.procs = append(s.procs, p)
	s.t.Logf("%s: %s %s (changed: %s)", in.name, binary, strings.Join(argv[1:], " "), strings.Join(changed, ", "))
	return p
}

// environ changes what a test run must and returns what it changed:
// the brokers (the test's broker), listen addresses (loopback, on the
// file's port when that is free here), paths under /var (under the root),
// the databases (the test's), the agent driver (sim: this is no
// hypervisor) and the trace exporter (none: no collector).
func (s *stack) environ(in instance, env map[string]string) []string {
	var changed []string
	set := func(k, v string) {
		if env[k] != v {
			changed = append(changed, k+"="+v)
			env[k] = v
		}
	}
	for _, l := range append([]listener{{"VMPLANE_METRICS_ADDR", ""}}, listeners[in.role()]...) {
		if v := env[l.env]; v != "" {
			set(l.env, s.listenAddr(in, l.env, v))
		}
	}
	if in.role() == "broker" {
		s.broker = env["VMPLANE_KAFKA_ADDR"]
		mkdir(s.t, filepath.Join(s.root, "var/lib", in.unit.get("StateDirectory")))
	}
	if in.role() == "gateway" {
		s.api = "http://" + env["VMPLANE_HTTP_ADDR"]
	}
	if in.role() == "agent" {
		mkdir(s.t, filepath.Join(s.root, "var/lib", in.unit.get("StateDirectory")))
		set("VMPLANE_AGENT_DRIVER", "sim")
	}
	if _, ok := env["VMPLANE_KAFKA_BROKERS"]; ok {
		set("VMPLANE_KAFKA_BROKERS", s.broker)
	}
	for k, v := range s.db {
		if _, ok := env[k]; ok {
			set(k, v)
		}
	}
	for _, k := range sortedKeys(env) {
		if strings.HasPrefix(env[k], "/var/") {
			set(k, filepath.Join(s.root, env[k]))
		}
	}
	if _, ok := env["VMPLANE_TRACE_EXPORTER"]; ok {
		set("VMPLANE_TRACE_EXPORTER", "none")
	}
	return changed
}

// listenAddr is addr on loopback, with addr's port if nobody here holds
// it, else a free one (other tests and a `make run` share this machine).
func (s *stack) listenAddr(in instance, key, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		s.t.Fatalf("%s: %s=%s: %v", in.name, key, addr, err)
	}
	var p int
	fmt.Sscan(port, &p)
	if !s.ports[p] && free(p) {
		s.ports[p] = true
		return net.JoinHostPort("127.0.0.1", port)
	}
	// Below the kernel's ephemeral range, which outgoing connections use.
	for range 1000 {
		q := 20000 + mrand.IntN(12000)
		if !s.ports[q] && free(q) {
			s.ports[q] = true
			s.t.Logf("%s: port %d of %s is taken here; using %d", in.name, p, key, q)
			return fmt.Sprintf("127.0.0.1:%d", q)
		}
	}
	s.t.Fatal("no free port")
	return ""
}

func free(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// environ is the process environment of a unit: what systemd gives every
// service, then the unit's variables.
func environ(env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// waitReady waits until the process answers ready on its /readyz (and the
// gateway on its API's), failing at once if it exits.
func (s *stack) waitReady(p *proc) {
	s.t.Helper()
	urls := []string{"http://" + p.metrics + "/readyz"}
	if p.in.role() == "gateway" {
		urls = append(urls, s.api+"/readyz")
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, u := range urls {
		for {
			err := get(u)
			if err == nil {
				break
			}
			select {
			case <-p.exited:
				s.t.Fatalf("%s exited (%s) before it was ready:\n%s", p.in.name, p.status, tail(p.log, 20))
			default:
			}
			if time.Now().After(deadline) {
				s.t.Fatalf("%s not ready after 60s: %v\n%s", p.in.name, err, tail(p.log, 20))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// checkAlive fails for a process that exited, or that logged that it could
// not listen, and checks that every metrics address serves /metrics.
func (s *stack) checkAlive() {
	s.t.Helper()
	for _, p := range s.procs {
		select {
		case <-p.exited:
			s.t.Errorf("%s exited (%s):\n%s", p.in.name, p.status, tail(p.log, 20))
			continue
		default:
		}
		if strings.Contains(readFile(s.t, p.log), "address already in use") {
			s.t.Errorf("%s: address already in use:\n%s", p.in.name, tail(p.log, 20))
		}
		if err := get("http://" + p.metrics + "/metrics"); err != nil {
			s.t.Errorf("%s: %v", p.in.name, err)
		}
	}
}

// stop ends the processes as systemd stops the units: SIGTERM, the
// broker last (the others are After= it, and stop before it), each group
// given 10 s before SIGKILL.
func (s *stack) stop() {
	var roles, broker []*proc
	for _, p := range s.procs {
		if p.in.role() == "broker" {
			broker = append(broker, p)
		} else {
			roles = append(roles, p)
		}
	}
	began := time.Now()
	s.terminate(roles)
	s.t.Logf("%d processes stopped in %.1fs of SIGTERM", len(roles), time.Since(began).Seconds())
	s.terminate(broker)
}

func (s *stack) terminate(ps []*proc) {
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(10 * time.Second)
	for _, p := range ps {
		select {
		case <-p.exited:
		case <-deadline:
			s.t.Errorf("%s did not stop within 10s of SIGTERM; killed:\n%s", p.in.name, tail(p.log, 10))
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
}

// adminKey runs `vmplane admin-key` as docs/operations.md does, in a shell
// that reads common.env, with the test's broker and no trace exporter.
func (s *stack) adminKey() string {
	s.t.Helper()
	cmd := exec.Command("bash", "-c", `set -a; . "$1"; set +a; VMPLANE_KAFKA_BROKERS=$2 VMPLANE_TRACE_EXPORTER=none exec "$3" admin-key`,
		"kit", filepath.Join(s.root, etcDir, "common.env"), s.broker, s.bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("vmplane admin-key: %v\n%s", err, errOut.String())
	}
	key := strings.TrimSpace(out.String())
	if _, ok := gateway.ParseAPIKey(key); !ok {
		s.t.Fatalf("vmplane admin-key printed %q, not a key", key)
	}
	return key
}

// deploy creates an offering with the admin key, waits for the sim
// agent's host, deploys a VM on it and waits until it is Active.
func (s *stack) deploy(key string) {
	s.t.Helper()
	c := &client{base: s.api, key: key}
	ctx := s.t.Context()
	until := func(what string, d time.Duration, f func() error) {
		s.t.Helper()
		deadline := time.Now().Add(d)
		for {
			err := f()
			if err == nil {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				s.t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	until("the admin key authenticates", 30*time.Second, func() error {
		return c.do(ctx, http.MethodGet, "/v1/offerings", nil, nil)
	})
	if err := c.do(ctx, http.MethodPost, "/v1/offerings", api.OfferingRequest{Name: "kit-small", CPU: 1, MemoryMB: 512}, nil); err != nil {
		s.t.Fatalf("create offering: %v", err)
	}
	until("the offering is listed", 30*time.Second, func() error {
		return c.do(ctx, http.MethodGet, "/v1/offerings/kit-small", nil, nil)
	})
	until("a reservable host", 60*time.Second, func() error {
		var hosts api.List[api.Host]
		if err := c.do(ctx, http.MethodGet, "/v1/hosts", nil, &hosts); err != nil {
			return err
		}
		for _, h := range hosts.Items {
			if h.Reservable {
				return nil
			}
		}
		return fmt.Errorf("%d hosts, none reservable", len(hosts.Items))
	})
	var job api.Job
	if err := c.do(ctx, http.MethodPost, "/v1/vms", api.DeployRequest{Name: "kit-vm", Offering: "kit-small"}, &job); err != nil {
		s.t.Fatalf("deploy: %v", err)
	}
	until("the deploy ends", 60*time.Second, func() error {
		if err := c.do(ctx, http.MethodGet, "/v1/jobs/"+job.ID, nil, &job); err != nil {
			return err
		}
		if !api.Finished(job.State) {
			return fmt.Errorf("job %s is %s (%s)", job.ID, job.State, job.TaskState)
		}
		return nil
	})
	if job.State != api.JobSucceeded {
		s.t.Fatalf("deploy job %s ended %s: %s %s", job.ID, job.State, job.Reason, job.Detail)
	}
	var vm api.VM
	until("the VM is Active", 30*time.Second, func() error {
		if err := c.do(ctx, http.MethodGet, "/v1/vms/"+job.VmID, nil, &vm); err != nil {
			return err
		}
		if vm.VmState != "Active" {
			return fmt.Errorf("vm %s is %s", vm.ID, vm.VmState)
		}
		return nil
	})
	s.t.Logf("vm %s Active on %s, %s", vm.ID, vm.HostID, vm.PowerState)
}

// client is the little of the gateway's API the test uses.
type client struct{ base, key string }

func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		idem := make([]byte, 8)
		_, _ = rand.Read(idem)
		req.Header.Set("Idempotency-Key", hex.EncodeToString(idem))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// get fails unless url answers 200.
func get(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
