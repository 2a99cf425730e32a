package storm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/schemas"
)

// DeploySize is the deploy open loop's size: a zone of Hosts sim hosts,
// and deploys sent at each rate of Rates in turn for Duration, up to the
// first rate whose p99 is past Ceiling, but always up to Target, the rate
// of the p99 target. Rates below Target find the highest rate under the
// ceiling on a box that cannot keep up with Target.
type DeploySize struct {
	Hosts    int           `json:"hosts"`
	Rates    []int         `json:"rates"`
	Target   int           `json:"target"`
	Duration time.Duration `json:"duration"`
	Ceiling  time.Duration `json:"ceiling"`
	Runs     int           `json:"runs"`
}

// Sizes of `make bench` and `make bench QUICK=1`.
var (
	DeployFull = DeploySize{Hosts: 10_000, Rates: []int{100, 200, 300, 500, 1000, 1500, 2000, 3000}, Target: 500,
		Duration: 5 * time.Second, Ceiling: 100 * time.Millisecond, Runs: 3}
	DeployQuick = DeploySize{Hosts: 100, Rates: []int{20}, Duration: 2 * time.Second, Ceiling: 100 * time.Millisecond, Runs: 1}
)

// DeploySample is one repetition of the deploy open loop.
type DeploySample struct {
	HostsUp time.Duration           // the roles' start → every host Up in the read model
	Actions map[int][]time.Duration // POST /v1/vms → GET /v1/jobs/{id}?wait= shows it succeeded
	Failed  map[int]int             // deploys not accepted or not succeeded
	Errs    map[int]string          // why a rate has no figures
	Stages  map[int]DeployStages    // where the time went, from record timestamps
}

// deployOffering is what every deploy asks for: small enough that the
// zone never fills (a host takes 1,024 of them).
var deployOffering = schemas.Offering{ID: "off-bench", Name: "bench", CPU: 1, MemoryMB: 512}

// RunDeploys runs one repetition of the deploy open loop: a fresh broker
// and database; the gateway, every processor (roles.ProcessorKinds), the
// sim agent of a Hosts-host zone and the Postgres projector wired by
// ops/roles in this process (the harness's child); deploys sent through
// REST on a fixed schedule, each timed until the read model shows its job
// succeeded. A rate whose p99 is past the ceiling is the last one sent.
func RunDeploys(ctx context.Context, ds DeploySize, pgBase string, log *slog.Logger) (DeploySample, error) {
	s := DeploySample{Actions: map[int][]time.Duration{}, Failed: map[int]int{}, Errs: map[int]string{}, Stages: map[int]DeployStages{}}
	e, err := newEnv(ctx, pgBase, log)
	if err != nil {
		return s, err
	}
	defer e.close()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	run := roleRunner(ctx, &wg, log)
	key, err := e.seedDeploys(ctx)
	if err != nil {
		return s, err
	}
	start := time.Now()
	c, err := e.startDeployRoles(ctx, ds, run)
	if err != nil {
		return s, err
	}
	if err := e.waitHostsUp(ctx, ds.Hosts, 5*time.Minute); err != nil {
		return s, err
	}
	s.HostsUp = time.Since(start)
	c.key = key
	if err := c.waitUp(ctx, 30*time.Second); err != nil {
		return s, err
	}
	if err := c.warm(ctx, func(ctx context.Context, i int) (done, error) { return c.deploy(ctx, fmt.Sprintf("warm-%d", i)) }); err != nil {
		return s, err
	}
	dones := map[int][]done{}
	for _, rate := range ds.Rates {
		out, failed, err := c.openLoop(ctx, rate, ds.Duration, func(ctx context.Context, i int) (done, error) {
			return c.deploy(ctx, fmt.Sprintf("r%d-%d", rate, i))
		})
		for _, a := range out {
			s.Actions[rate] = append(s.Actions[rate], a.took)
		}
		s.Failed[rate], dones[rate] = failed, out
		if err != nil {
			s.Errs[rate] = err.Error()
			break
		}
		if harness.Percentile(s.Actions[rate], 99) > ds.Ceiling && rate >= ds.Target {
			break // the highest rate under the ceiling is known
		}
	}
	cancel()
	wg.Wait()
	at, err := e.deployTimes(context.WithoutCancel(ctx))
	if err != nil {
		return s, fmt.Errorf("record times: %w", err)
	}
	for rate, d := range dones {
		s.Stages[rate] = deployStages(at, d)
	}
	return s, nil
}

// seedDeploys writes the offering and the admin key the deploys are sent
// with; the projector stores both.
func (e *env) seedDeploys(ctx context.Context) (string, error) {
	key, recs, err := gateway.AdminAccount(time.Now().UnixMilli())
	if err != nil {
		return "", err
	}
	recs = append(recs, schemas.Record{Topic: schemas.TopicCatalog, Key: deployOffering.ID,
		Value: &schemas.ServiceOffering{Offering: deployOffering, CreatedAt: time.Now().UnixMilli()}})
	if err := e.kcfg.Produce(ctx, e.cl, schemas.NewCodec(nil), recs...); err != nil {
		return "", fmt.Errorf("seed the offering and admin key: %w", err)
	}
	return key, nil
}

// startDeployRoles runs the projector, every processor (roles.ProcessorKinds:
// a deploy's placement events reach the lease processor too, as in a real
// stack), the sim agent of ds.Hosts hosts (one zone, 20 clusters) and
// the gateway through run; it returns the gateway's client.
func (e *env) startDeployRoles(ctx context.Context, ds DeploySize, run func(string, roles.Runner)) (*apiClient, error) {
	o := roles.Options{Kafka: e.kcfg, InstanceID: "bench", Logger: e.log}
	proj, err := roles.NewPostgresProjector(o, e.dsn)
	if err != nil {
		return nil, err
	}
	run("projector", proj)
	settings := roles.Settings{PingInterval: time.Minute}
	var procs []roles.Processor
	for _, kind := range roles.ProcessorKinds {
		p, err := roles.NewProcessor(kind, o, settings, engine.SystemClock{})
		if err != nil {
			return nil, err
		}
		run("processor-"+kind, p)
		procs = append(procs, p)
	}
	sa, err := roles.NewSimAgent(o, roles.SimLayout{Prefix: "h", Zone: "z1", Pods: 1, Clusters: min(20, ds.Hosts), Hosts: ds.Hosts, CPU: 1024, MemoryMB: 4 << 20}, settings)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	gw, err := roles.NewGateway(o, e.dsn, gateway.Config{Addr: addr, ZoneID: "z1", RatePerSecond: -1, MaxStreamsPerKey: -1, Logger: e.log})
	if err != nil {
		return nil, err
	}
	run("gateway", gw)
	for _, p := range procs {
		for !p.Ready() {
			if err := sleep(ctx, 10*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	run("agent", sa)
	return &apiClient{base: "http://" + addr, http: newLoadClient()}, nil
}

// waitHostsUp waits until the read model has n hosts Up.
func (e *env) waitHostsUp(ctx context.Context, n int, limit time.Duration) error {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(limit)
	for {
		var up int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM hosts WHERE status = 'Up'`).Scan(&up)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err == nil && up >= n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d hosts Up after %s (last error: %v)", up, n, limit, err)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// warm carries out act(i) for the warm-up actions (not measured),
// warmupWave at once.
func (c *apiClient) warm(ctx context.Context, act func(ctx context.Context, i int) (done, error)) error {
	for w := 0; w < warmups; w += warmupWave {
		var wg sync.WaitGroup
		errs := make([]error, warmupWave)
		for i := range min(warmupWave, warmups-w) {
			wg.Go(func() { _, errs[i] = act(ctx, w+i) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// deploy deploys a VM named name and waits until the read model has its
// job succeeded.
func (c *apiClient) deploy(ctx context.Context, name string) (done, error) {
	sent := time.Now()
	var job api.Job
	code, err := c.do(ctx, http.MethodPost, "/v1/vms", api.DeployRequest{Name: name, Offering: deployOffering.Name}, &job)
	if err != nil || code != http.StatusAccepted {
		return done{}, fmt.Errorf("deploy %s: status %d: %v", name, code, err)
	}
	if err := c.succeeded(ctx, job.ID, name); err != nil {
		return done{}, err
	}
	return done{job: job.ID, vm: job.VmID, sent: sent, took: time.Since(sent)}, nil
}
