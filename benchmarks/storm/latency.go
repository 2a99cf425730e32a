package storm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// LatencySize is the action-latency scenario's size: each rate is sent for
// Duration, open loop.
type LatencySize struct {
	Rates    []int
	Duration time.Duration
	Runs     int
}

// Sizes of `make bench` and `make bench QUICK=1`.
var (
	LatencyFull = LatencySize{Rates: []int{100, 500, 1000, 2000}, Duration: 5 * time.Second, Runs: 3}
	// Quick runs once: three repetitions (6 s each, mostly setup) would
	// take `make bench QUICK=1` to the edge of its minute.
	LatencyQuick = LatencySize{Rates: []int{20}, Duration: 2 * time.Second, Runs: 1}
)

// Pool is how many VMs the actions go to: enough that no VM is rebooted
// twice in a rate's phase (the highest rate × the phase's seconds, at least
// 100), so the open loop never sends a reboot to a VM whose previous one is
// still in flight, which the gateway answers 409. With each VM once every
// 2 s, an overloaded box (p99 past 2 s at 1,000/s) failed 477 of 5,000
// actions on conflicts the harness itself made.
func (l LatencySize) Pool() int {
	return max(slices.Max(l.Rates)*int(math.Ceil(l.Duration.Seconds())), 100)
}

// HopRate is the rate of the limit (one transactional hop): the rate of
// the first target (p99 ≤ 8 ms at 500/s), or the highest quick rate.
func (l LatencySize) HopRate() int {
	if slices.Contains(l.Rates, 500) {
		return 500
	}
	return slices.Max(l.Rates)
}

// LatencySample is one repetition: per rate, every action's latency.
type LatencySample struct {
	Actions map[int][]time.Duration // send → GET /v1/jobs/{id}?wait= shows it final
	Stages  map[int]stageTimes      // where the time went, from record timestamps
	Failed  map[int]int             // actions not accepted or not succeeded
	Errs    map[int]string          // why a rate has no figures
	Hop     []time.Duration         // produce → consume through one runtime hop
}

// warmups is how many VMs beyond the pool are seeded: each warm-up reboot
// (not measured) gets its own. They are sent warmupWave at a time.
const (
	warmups    = 30
	warmupWave = 10
)

// Bench topics of the hop limit.
const (
	topicHopIn    = "bench.hop.in.v1"
	topicHopOut   = "bench.hop.out.v1"
	topicHopState = "bench.hop.state.v1"
)

func init() {
	benchTopics = append(benchTopics,
		schemas.TopicSpec{Name: topicHopIn, KeyClass: schemas.KeyVM, Doc: "one-hop limit: input"},
		schemas.TopicSpec{Name: topicHopOut, KeyClass: schemas.KeyVM, Doc: "one-hop limit: output"},
		schemas.TopicSpec{Name: topicHopState, KeyClass: schemas.KeyVM, Compacted: true, Doc: "one-hop limit: changelog (stays empty)"})
}

// hopMachine forwards every record to topicHopOut under its key and keeps
// no state: one transactional consume→produce hop of the runtime.
type hopMachine struct{}

func (hopMachine) Step(_ *schemas.VmRecord, in schemas.Record, _ time.Time) (*schemas.VmRecord, []schemas.Record) {
	return nil, []schemas.Record{{Topic: topicHopOut, Key: in.Key, Value: nullState}}
}
func (hopMachine) Tick(*schemas.VmRecord, string, time.Time) (*schemas.VmRecord, []schemas.Record) {
	return nil, nil
}
func (hopMachine) Wake(*schemas.VmRecord) time.Time { return time.Time{} }

// RunLatency runs one repetition of the action-latency scenario: a fresh
// broker and database, the VM processor, Postgres projector, sim agent
// (zero latency) and gateway wired by ops/roles in this process, and
// reboots sent through REST on a fixed schedule at each rate; then the
// one-hop limit on the same broker.
func RunLatency(ctx context.Context, ls LatencySize, pgBase string, log *slog.Logger) (LatencySample, error) {
	s := LatencySample{Actions: map[int][]time.Duration{}, Stages: map[int]stageTimes{}, Failed: map[int]int{}, Errs: map[int]string{}}
	e, err := newEnv(ctx, pgBase, log)
	if err != nil {
		return s, err
	}
	defer e.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	run := roleRunner(ctx, &wg, log)

	pool := ls.Pool()
	o := roles.Options{Kafka: e.kcfg, InstanceID: "bench", Logger: log}
	sa, key, err := e.latencyFleet(ctx, o, pool)
	if err != nil {
		return s, err
	}
	addr, err := e.startRoles(ctx, o, sa, run)
	if err != nil {
		return s, err
	}
	c := &apiClient{base: "http://" + addr, key: key, http: newLoadClient()}
	if err := c.waitUp(ctx, 30*time.Second); err != nil {
		return s, err
	}
	if err := c.warmUp(ctx, pool); err != nil {
		return s, err
	}
	dones := c.measure(ctx, ls, pool, &s)
	cancel()
	wg.Wait()
	rt, err := e.readTimes(context.WithoutCancel(ctx))
	if err != nil {
		return s, fmt.Errorf("record times: %w", err)
	}
	for rate, d := range dones {
		s.Stages[rate] = rt.stages(d)
	}
	if s.Hop, err = e.hop(context.WithoutCancel(ctx), ls.HopRate(), ls.Duration, log); err != nil {
		return s, fmt.Errorf("one hop: %w", err)
	}
	return s, nil
}

// latencyFleet starts the sim agent's VMs, the pool and one for each
// warm-up, seeds them, and issues the admin key the actions are sent with.
func (e *env) latencyFleet(ctx context.Context, o roles.Options, pool int) (*roles.SimAgent, string, error) {
	sa, err := roles.NewSimAgent(o, roles.SimLayout{Prefix: "h", Zone: "z1", Pods: 1, Clusters: 1, Hosts: 20, CPU: 1024, MemoryMB: 4 << 20},
		roles.Settings{PingInterval: time.Minute})
	if err != nil {
		return nil, "", err
	}
	hosts := sa.Driver.Hosts()
	perHost := (pool + warmups + len(hosts) - 1) / len(hosts)
	for i := range pool + warmups {
		if err := sa.Driver.Start(ctx, hosts[i/perHost].ID, agent.VMSpec{ID: vmID(i), CPU: 1, MemoryMB: 512}); err != nil {
			return nil, "", err
		}
	}
	if _, err := e.seed(ctx, Size{VMs: pool + warmups}, hosts, perHost); err != nil {
		return nil, "", fmt.Errorf("seed: %w", err)
	}
	key, err := e.seedAdmin(ctx)
	if err != nil {
		return nil, "", err
	}
	return sa, key, nil
}

// startRoles runs the projector, the VM processor, the agent sa and the
// gateway through run, and waits until the seeded VMs are projected and
// the processor is ready; it returns the gateway's address.
func (e *env) startRoles(ctx context.Context, o roles.Options, sa *roles.SimAgent, run func(string, roles.Runner)) (string, error) {
	proj, err := roles.NewPostgresProjector(o, e.dsn)
	if err != nil {
		return "", err
	}
	run("projector", proj)
	vmp, err := roles.NewProcessor(roles.KindVM, o, roles.Settings{PingInterval: time.Minute}, engine.SystemClock{})
	if err != nil {
		return "", err
	}
	run("processor-vm", vmp)
	run("agent", sa)
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	gw, err := roles.NewGateway(o, e.dsn, gateway.Config{Addr: addr, RatePerSecond: -1, MaxStreamsPerKey: -1, Logger: o.Logger})
	if err != nil {
		return "", err
	}
	run("gateway", gw)
	if _, err := e.waitProjected(ctx, schemas.TopicVmEvents, 5*time.Minute); err != nil {
		return "", err
	}
	for !vmp.Ready() {
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return "", err
		}
	}
	return addr, nil
}

// warmUp sends the warm-up reboots (not measured), one VM beyond the pool
// each: the first actions pay for connections and prepared statements.
// They go warmupWave at once, so that the statements are prepared on every
// connection of the gateway's pool and the client holds the HTTP
// connections a burst needs; one at a time, they warmed a single
// connection of each.
func (c *apiClient) warmUp(ctx context.Context, pool int) error {
	return c.warm(ctx, func(ctx context.Context, i int) (done, error) { return c.reboot(ctx, vmID(pool+i)) })
}

// measure sends reboots of the pool's VMs at each rate of ls in turn, and
// records in s what each took and how many failed; it returns the actions
// done at each rate.
func (c *apiClient) measure(ctx context.Context, ls LatencySize, pool int, s *LatencySample) map[int][]done {
	next := 0
	dones := map[int][]done{}
	for _, rate := range ls.Rates {
		base := next
		done, failed, err := c.openLoop(ctx, rate, ls.Duration, func(ctx context.Context, i int) (done, error) {
			return c.reboot(ctx, vmID((base+i+1)%pool))
		})
		next += int(float64(rate) * ls.Duration.Seconds())
		for _, a := range done {
			s.Actions[rate] = append(s.Actions[rate], a.took)
		}
		dones[rate], s.Failed[rate] = done, failed
		if err != nil {
			s.Errs[rate] = err.Error()
		}
	}
	return dones
}

// seedAdmin issues an admin API key through accounts.v1; the projector
// stores it (apiClient.waitUp waits for that).
func (e *env) seedAdmin(ctx context.Context) (string, error) {
	key, recs, err := gateway.AdminAccount(time.Now().UnixMilli())
	if err != nil {
		return "", err
	}
	if err := e.kcfg.Produce(ctx, e.cl, schemas.NewCodec(nil), recs...); err != nil {
		return "", fmt.Errorf("seed admin key: %w", err)
	}
	return key, nil
}

// hop measures the limit: records produced on a fixed schedule at rate
// into a runtime processor that forwards each (SkipDecode, transactions,
// offset commits, read_committed), from the produce call to the moment a
// read_committed consumer of the output polls it.
func (e *env) hop(ctx context.Context, rate int, d time.Duration, log *slog.Logger) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hp, err := engine.New(engine.Config{Name: "bench-hop", Inputs: []string{topicHopIn}, Changelog: topicHopState,
		Kafka: e.kcfg, InstanceID: "bench", Logger: log, SkipDecode: true}, engine.Machine[*schemas.VmRecord](hopMachine{}))
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- hp.Run(ctx) }()
	defer func() {
		cancel()
		// Run returns nil when cancelled: anything else failed first.
		if err := <-done; err != nil {
			log.Warn("hop processor", "err", err)
		}
	}()
	for !hp.Ready() || hp.Assigned() < int(schemas.Partitions[schemas.KeyVM]) {
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
	cons, err := kgo.NewClient(e.kcfg.Opts(kgo.ConsumeTopics(topicHopOut), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(e.kcfg.Opts(kgo.ProducerLinger(0))...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	n := int(float64(rate) * d.Seconds())
	sent := make([]time.Time, n)
	var mu sync.Mutex
	pr := &producer{cl: prod}
	go func() {
		t0 := time.Now()
		for i := range n {
			at := t0.Add(time.Duration(i) * time.Second / time.Duration(rate))
			time.Sleep(time.Until(at))
			mu.Lock()
			sent[i] = time.Now()
			mu.Unlock()
			pr.produce(ctx, &kgo.Record{Topic: topicHopIn, Key: []byte(fmt.Sprintf("hop-%07d", i)), Value: []byte{0}})
		}
	}()
	out := make([]time.Duration, 0, n)
	cctx, ccancel := context.WithTimeout(ctx, d+time.Minute)
	defer ccancel()
	for len(out) < n {
		f := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			return nil, fmt.Errorf("consumed %d of %d", len(out), n)
		}
		now := time.Now()
		f.EachRecord(func(r *kgo.Record) {
			var i int
			if _, err := fmt.Sscanf(string(r.Key), "hop-%d", &i); err == nil && i < n {
				mu.Lock()
				out = append(out, now.Sub(sent[i]))
				mu.Unlock()
			}
		})
	}
	return out, pr.flush(ctx)
}

// apiClient is the load's REST client.
type apiClient struct {
	base, key string
	http      *http.Client
}

func (c *apiClient) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, err
		}
	}
	return resp.StatusCode, nil
}

// waitUp waits until the gateway knows the admin key (the projector has
// stored it).
func (c *apiClient) waitUp(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		code, err := c.do(ctx, http.MethodGet, "/v1/vms?limit=1", nil, nil)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gateway not answering with the bench key in %s (status %d, err %v)", limit, code, err)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// done is one measured action.
type done struct {
	job, vm string
	sent    time.Time
	took    time.Duration
}

// openLoop carries out act(i) for i = 0, 1, … every 1/rate s for d,
// whatever has completed, each on a goroutine of its own (a failed one
// counts at the time it took to fail), and measures each from its send to the answer of the long-poll
// GET /v1/jobs/{id}?wait=60s, which the gateway answers when the
// projector's commit of the final job row wakes it: the figure is the read
// model's, at one GET per action.
func (c *apiClient) openLoop(ctx context.Context, rate int, d time.Duration, act func(ctx context.Context, i int) (done, error)) (out []done, failed int, err error) {
	n := int(float64(rate) * d.Seconds())
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	t0 := time.Now()
	for i := range n {
		if err := sleep(ctx, time.Until(t0.Add(time.Duration(i)*time.Second/time.Duration(rate)))); err != nil {
			return nil, 0, err
		}
		wg.Go(func() {
			sent := time.Now()
			a, err := act(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// A failure counts in the figures at the time it took to
				// fail, so that a p99 is never of the fastest 99 % alone.
				failed++
				if firstErr == nil {
					firstErr = err
				}
				a = done{sent: sent, took: time.Since(sent)}
			}
			out = append(out, a)
		})
	}
	wg.Wait()
	if failed > n/100 {
		return nil, failed, fmt.Errorf("%d of %d actions failed, first: %w", failed, n, firstErr)
	}
	return out, failed, nil
}

// reboot reboots vm and waits until the read model has the job succeeded.
func (c *apiClient) reboot(ctx context.Context, vm string) (done, error) {
	sent := time.Now()
	var job api.Job
	code, err := c.do(ctx, http.MethodPost, "/v1/vms/"+vm+"/actions", map[string]any{"action": "reboot"}, &job)
	if err != nil || code != http.StatusAccepted {
		return done{}, fmt.Errorf("reboot %s: status %d: %v", vm, code, err)
	}
	if err := c.succeeded(ctx, job.ID, vm); err != nil {
		return done{}, err
	}
	return done{job: job.ID, vm: vm, sent: sent, took: time.Since(sent)}, nil
}

// succeeded waits (one long-poll) until the read model has job ended, and
// wants it succeeded; what names its VM in errors.
func (c *apiClient) succeeded(ctx context.Context, job, what string) error {
	var j api.Job
	code, err := c.do(ctx, http.MethodGet, "/v1/jobs/"+job+"?wait=60s", nil, &j)
	switch {
	case err != nil:
		return fmt.Errorf("job %s: %w", job, err)
	case code != http.StatusOK || !api.Finished(j.State):
		return fmt.Errorf("job %s of %s: status %d, state %q after a minute", job, what, code, j.State)
	case j.State != api.JobSucceeded:
		return fmt.Errorf("job %s of %s: %s (%s)", job, what, j.State, j.Reason)
	}
	return nil
}

// newLoadClient is the load's HTTP client: a timeout beyond the
// long-poll's wait (60 s), so that a slow job is timed, not cut off.
func newLoadClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}, Timeout: 90 * time.Second}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
