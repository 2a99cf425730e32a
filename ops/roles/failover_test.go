package roles

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// TestDeploySurvivesVMProcessorKill kills the VM processor after placement
// and before the agent answers, starts another instance, and checks that the
// job succeeds and that vm.events.v1 (read_committed) holds each of its
// events exactly once.
func TestDeploySurvivesVMProcessorKill(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	ctx := t.Context()
	kcfg, _ := testkit.Kafka(t)
	timelineOnFailure(t, kcfg, time.Now())
	cl := client(t, kcfg)
	log := slog.New(slog.DiscardHandler)
	o := Options{Kafka: kcfg, InstanceID: "a", Logger: log}
	set := Settings{PingInterval: time.Second}
	startProcessors(t, o, set, engine.SystemClock{}, KindPlacement, KindHost)
	// The agent takes 3 s to start a VM: time to kill the VM processor.
	d, err := sim.New(sim.Config{Layout: sim.Layout{Prefix: "h", Zone: "zone-1", Pods: 1, ClustersPerPod: 2, HostsPerCluster: 2, CPU: 16, MemoryMB: 65536},
		Latency: sim.Durations{Start: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	go agent.New(agent.Config{ID: "test", Kafka: kcfg, PingInterval: time.Second, Logger: log}, d).Run(ctx)

	vmCtx, kill := context.WithCancel(ctx)
	vmA, err := NewProcessor(KindVM, Options{Kafka: kcfg, InstanceID: "a", Logger: log}, set, engine.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- vmA.Run(vmCtx) }()

	waitPlaceable(t, kcfg, 4)
	deploy := &schemas.Deploy{VmCommand: schemas.VmCommand{CommandID: "job-1", VmID: "vm-1", Account: "acme", Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()},
		Name: "web-1", ZoneID: "zone-1", Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}}
	produce(t, cl, schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm-1", Value: deploy})

	// After placement (StartVm on its way to the agent), before the answer.
	waitFor(t, kcfg, schemas.TopicAgentCommands, func(r schemas.Record) bool {
		s, ok := r.Value.(*schemas.StartVm)
		return ok && s.VmID == "vm-1"
	})
	kill()
	<-doneA

	vmB, err := NewProcessor(KindVM, Options{Kafka: kcfg, InstanceID: "b", Logger: log}, set, engine.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	go vmB.Run(ctx)
	waitFor(t, kcfg, schemas.TopicVmEvents, func(r schemas.Record) bool {
		s, ok := r.Value.(*schemas.JobSucceeded)
		return ok && s.JobID == "job-1"
	})
	time.Sleep(500 * time.Millisecond)

	// Each of the job's events exactly once.
	seen := map[string]int{}
	for _, r := range readAll(t, kcfg, schemas.TopicVmEvents) {
		switch v := r.Value.(type) {
		case *schemas.JobAccepted:
			seen["accepted"]++
		case *schemas.JobStepped:
			seen[fmt.Sprintf("step %d %s", v.Seq, v.TaskState)]++
		case *schemas.JobSucceeded:
			seen["succeeded"]++
		case *schemas.JobFailed, *schemas.JobCancelled:
			t.Fatalf("job did not succeed: %#v", v)
		}
	}
	if seen["accepted"] != 1 || seen["succeeded"] != 1 || len(seen) < 4 {
		t.Fatalf("job events: %v", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", k, n)
		}
	}
	t.Logf("job events: %v", seen)
}

func produce(t *testing.T, cl *kgo.Client, r schemas.Record) {
	t.Helper()
	kr, err := kafka.ToKafka(t.Context(), schemas.NewCodec(nil), r)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), kr).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads a topic (read_committed) up to its end as it is when called.
// Control records are kept so that a partition ending in a transaction marker
// is seen to its end.
func readAll(t *testing.T, kcfg kafka.Config, topic string) []schemas.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []schemas.Record
	err := kafka.ReadToEnd(ctx, kcfg, []string{topic}, func(kr *kgo.Record) error {
		if kr.Attrs.IsControl() {
			return nil
		}
		r, err := kafka.FromKafka(ctx, schemas.NewCodec(nil), kr)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func waitFor(t *testing.T, kcfg kafka.Config, topic string, match func(schemas.Record) bool) {
	t.Helper()
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumeTopics(kcfg.Topic(topic)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The last records seen go into the failure: what happened instead.
	var seen []string
	for ctx.Err() == nil {
		for _, kr := range kcfg.In(cl.PollFetches(ctx).Records()) {
			r, err := kafka.FromKafka(ctx, schemas.NewCodec(nil), kr)
			if err == nil && match(r) {
				return
			}
			if err == nil {
				seen = append(seen, fmt.Sprintf("%s %s %+v", r.Key, schemas.TypeName(r.Value), r.Value))
				if len(seen) > 30 {
					seen = seen[1:]
				}
			}
		}
	}
	t.Fatalf("no matching record on %s in 30 s; the last %d records:\n%s", topic, len(seen), strings.Join(seen, "\n"))
}

// waitPlaceable waits until placement's committed changelog holds n
// reservable hosts: a deploy sent before then may find "no host".
func waitPlaceable(t *testing.T, kcfg kafka.Config, n int) {
	t.Helper()
	reservable := map[string]bool{}
	waitFor(t, kcfg, schemas.TopicPlacementState, func(r schemas.Record) bool {
		if h, ok := r.Value.(*schemas.ZoneHost); ok {
			reservable[h.Host.HostID] = h.Host.Reservable
		}
		up := 0
		for _, ok := range reservable {
			if ok {
				up++
			}
		}
		return up >= n
	})
}
