package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// rebalancer is a counter whose Wake, called by restore's load, simulates the
// group callbacks firing on a franz-go goroutine mid-restore: partitions
// lost and assigned again (a rejoin after a broker restart).
type rebalancer struct {
	counter
	fire func()
}

func (r *rebalancer) Wake(s *schemas.VmRecord) time.Time {
	if r.fire != nil {
		f := r.fire
		r.fire = nil
		f()
	}
	return r.counter.Wake(s)
}

// secondOwner writes `each` reports for every one of 20 keys (vm-0 to
// vm-19), runs a first processor over them until it has stepped them all,
// stops it, and returns a processor of m that has not started (no
// partition assigned), the partitions of vm.power.v1, and a client to
// restore with.
func secondOwner(t *testing.T, m Machine[*schemas.VmRecord], each int) (*Processor[*schemas.VmRecord], []int32, *kgo.Client) {
	t.Helper()
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	produceReports(t, cfg, 20, each)
	ctx1, stop1 := context.WithCancel(t.Context())
	_, done1 := runProcessor(t, ctx1, cfg, "a", clock)
	readEvents(t, cfg, 20*each)
	stop1()
	<-done1
	p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "b", Clock: clock}, m)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := schemas.TopicByName(schemas.TopicVmPower)
	var parts []int32
	for i := range spec.PartitionsOf() {
		parts = append(parts, i)
	}
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return p, parts, cl
}

// Partitions lost and assigned again while their restore reads must not
// end ready on the state the lost owner period read and then dropped.
func TestPartitionLostDuringRestoreIsRestoredAgain(t *testing.T) {
	m := &rebalancer{counter: counter{alarmAfter: time.Hour}}
	p, parts, cl := secondOwner(t, m, 2)
	all := map[string][]int32{schemas.TopicVmPower: parts}
	p.onAssigned(all)
	m.fire = func() { p.onDropped(all); p.onAssigned(all) }
	if err := p.applyAssignments(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	// Next loop iteration.
	if err := p.applyAssignments(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, part := range parts {
		if int(part) < len(p.st.parts) {
			n += len(p.st.parts[part])
		}
	}
	owned := 0
	for _, part := range parts {
		if p.owns(part) {
			owned++
		}
	}
	if !p.Ready() || owned != len(parts) || n != 20 {
		t.Fatalf("ready %v, owned %d of %d partitions, %d of 20 keys in memory", p.Ready(), owned, len(parts), n)
	}
}

// forgetter is a counter that records what the runtime tells it to forget.
type forgetter struct {
	counter
	forgot []string
}

func (f *forgetter) Forget(key string) { f.forgot = append(f.forgot, key) }

// A Forgetter hears each key of a partition the processor no longer holds,
// and no other key; and every key when a transaction aborts.
func TestDroppedPartitionsKeysAreForgotten(t *testing.T) {
	m := &forgetter{counter: counter{alarmAfter: time.Hour}}
	p, parts, cl := secondOwner(t, m, 1)
	p.onAssigned(map[string][]int32{schemas.TopicVmPower: parts})
	if err := p.applyAssignments(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	if len(m.forgot) != 0 {
		t.Fatalf("forgot %v before anything was dropped", m.forgot)
	}
	dropped := parts[:len(parts)/2]
	var want []string
	for k := range 20 {
		key := fmt.Sprintf("vm-%d", k)
		if slices.Contains(dropped, schemas.PartitionOf([]byte(key), int32(len(parts)))) {
			want = append(want, key)
		}
	}
	if len(want) == 0 || len(want) == 20 {
		t.Fatalf("the dropped partitions hold %d of the 20 keys; want some", len(want))
	}
	p.onDropped(map[string][]int32{schemas.TopicVmPower: dropped})
	if err := p.applyAssignments(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(m.forgot)
	if !slices.Equal(m.forgot, want) {
		t.Fatalf("forgot %v, want the keys of partitions %v: %v", m.forgot, dropped, want)
	}
	// An aborted transaction drops every state: the other keys are
	// forgotten too, each once.
	p.resetAll()
	slices.Sort(m.forgot)
	if len(m.forgot) != 20 || len(slices.Compact(m.forgot)) != 20 {
		t.Fatalf("forgot %v after the reset; want each of the 20 keys once", m.forgot)
	}
}
