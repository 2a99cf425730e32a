package hoststorm

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// Size is one scenario size.
type Size struct {
	Hosts        int
	PingInterval time.Duration
	Runs         int
}

// Full and Quick are the sizes of `make bench` and `make bench QUICK=1`.
var (
	Full  = Size{Hosts: 10_000, PingInterval: 5 * time.Second, Runs: 3}
	Quick = Size{Hosts: 200, PingInterval: time.Second, Runs: 1}
)

// PingTimeout is the host processor's ping timeout at this size: 2.5 ping
// intervals, its default (docs/design.md §13).
func (sz Size) PingTimeout() time.Duration { return sz.PingInterval * 5 / 2 }

// Watch is how long the hosts are followed after a restart: past the ping
// timeout of every ping the processors had not stepped, and a round more.
func (sz Size) Watch() time.Duration { return sz.PingTimeout() + sz.PingInterval }

// Sample is what one repetition measured.
type Sample struct {
	// Connect is the agent's start → every host Up on host.status.v1;
	// Pinged the same → every host's first ping on host.events.v1.
	Connect, Pinged time.Duration
	Restart, Outage Restart
}

// Restart is one kill and start of the processors' child.
type Restart struct {
	// Down is how long the processors were away: SIGKILL → exec.
	Down time.Duration
	// Ready is exec → every processor restored and consuming.
	Ready time.Duration
	// Left and Probed count the hosts that left Up and the hosts
	// investigated from the kill to Watch after Ready; Up is the hosts Up
	// at the end.
	Left, Probed, Up int
}

// Run runs one repetition at size sz.
func Run(ctx context.Context, sz Size, log *slog.Logger) (Sample, error) {
	var s Sample
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		return s, err
	}
	defer b.Close()
	kcfg := kafka.Config{Brokers: b.Addrs()}
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		return s, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := kcfg.EnsureTopics(ctx, cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		return s, err
	}
	drv, err := sim.New(sim.Config{Layout: sim.Layout{Zone: "z1", Pods: 1, ClustersPerPod: max(sz.Hosts/20, 1),
		HostsPerCluster: min(sz.Hosts, 20), CPU: 64, MemoryMB: 256 << 10}})
	if err != nil {
		return s, err
	}
	w, err := newWatch(ctx, kcfg, len(drv.Hosts()))
	if err != nil {
		return s, err
	}
	defer w.close()
	args := ChildArgs{Brokers: kcfg.Brokers, PingInterval: sz.PingInterval}
	c, _, err := startChild(ctx, args)
	if err != nil {
		return s, err
	}
	defer func() { c.Kill() }()

	a := agent.New(agent.Config{ID: "bench", Kafka: kcfg, PingInterval: sz.PingInterval, Logger: log, ShutdownGrace: time.Second}, drv)
	actx, stopAgent := context.WithCancel(ctx)
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- a.Run(actx) }()
	defer func() {
		stopAgent()
		if err := <-done; err != nil {
			log.Warn("agent", "err", err)
		}
	}()
	up, pinged, err := w.waitAll(ctx, 5*time.Minute)
	if err != nil {
		return s, fmt.Errorf("connect: %w", err)
	}
	s.Connect, s.Pinged = up.Sub(t0), pinged.Sub(t0)

	r := restarter{adm: adm, kcfg: kcfg, w: w, args: args, sz: sz}
	if c, s.Restart, err = r.restart(ctx, c, 0); err != nil {
		return s, fmt.Errorf("restart: %w", err)
	}
	// The outage ends so that the deadlines of the last pings the killed
	// processors stepped fall due as the new ones are ready: they then
	// have the backlog of pings to read before those deadlines count.
	outage := max(sz.PingTimeout()-s.Restart.Ready, 0)
	if c, s.Outage, err = r.restart(ctx, c, outage); err != nil {
		return s, fmt.Errorf("restart after an outage: %w", err)
	}
	return s, nil
}

// restarter kills and starts the processors' child.
type restarter struct {
	adm  *kadm.Client
	kcfg kafka.Config
	w    *watch
	args ChildArgs
	sz   Size
}

// restart waits until the host processor has stepped the agents' next
// round, kills c with SIGKILL, starts a new child after down, and follows
// the hosts for Watch once it is ready.
func (r *restarter) restart(ctx context.Context, c *harness.Child, down time.Duration) (*harness.Child, Restart, error) {
	var res Restart
	if err := r.nextRound(ctx); err != nil {
		return c, res, err
	}
	r.w.mark()
	killed := time.Now()
	c.Kill()
	if err := sleep(ctx, down-time.Since(killed)); err != nil {
		return c, res, err
	}
	res.Down = time.Since(killed)
	var err error
	c, res.Ready, err = startChild(ctx, r.args)
	if err != nil {
		return nil, res, err
	}
	if err := sleep(ctx, r.sz.Watch()); err != nil {
		return c, res, err
	}
	res.Left, res.Probed, res.Up = r.w.counts()
	return c, res, nil
}

// nextRound waits until the agents have sent another round of pings and
// the host processor's group has committed every record of host.events.v1.
func (r *restarter) nextRound(ctx context.Context) error {
	topic := r.kcfg.Topic(schemas.TopicHostEvents)
	group := r.kcfg.Group("vmplane-processor-host")
	start, err := r.ends(ctx, topic)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(r.sz.PingInterval + time.Minute)
	for time.Now().Before(deadline) {
		end, err := r.ends(ctx, topic)
		if err != nil {
			return err
		}
		if end >= start+int64(r.sz.Hosts) {
			o, err := r.adm.FetchOffsets(ctx, group)
			if err != nil {
				return err
			}
			var done int64
			o.Each(func(or kadm.OffsetResponse) {
				if or.Topic == topic && or.Err == nil {
					done += or.At
				}
			})
			if done >= end {
				return nil
			}
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("no round of %d pings stepped within a ping interval and a minute", r.sz.Hosts)
}

// ends sums the end offsets of topic's partitions. A fresh admin client's
// first listings can fail for the whole topic (UNKNOWN_TOPIC_OR_PARTITION)
// before its metadata knows it: they are tried again.
func (r *restarter) ends(ctx context.Context, topic string) (int64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := r.adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = l.Error()
		}
		if err == nil {
			var n int64
			l.Each(func(o kadm.ListedOffset) { n += o.Offset })
			return n, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("list end offsets of %s: %w", topic, err)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
