package engine

import (
	"context"
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

// Partitions lost and assigned again while their restore reads must not
// end ready on the state the lost owner period read and then dropped.
func TestPartitionLostDuringRestoreIsRestoredAgain(t *testing.T) {
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	produceReports(t, cfg, 20, 2)
	ctx1, stop1 := context.WithCancel(t.Context())
	_, done1 := runProcessor(t, ctx1, cfg, "a", clock)
	readEvents(t, cfg, 40)
	stop1()
	<-done1

	m := &rebalancer{counter: counter{alarmAfter: time.Hour}}
	p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "b", Clock: clock}, Machine[*schemas.VmRecord](m))
	if err != nil {
		t.Fatal(err)
	}
	var parts []int32
	for _, tp := range schemas.Topics {
		if tp.Name == schemas.TopicVmPower {
			for i := range tp.PartitionsOf() {
				parts = append(parts, i)
			}
		}
	}
	all := map[string][]int32{schemas.TopicVmPower: parts}
	p.onAssigned(all)
	m.fire = func() { p.onDropped(all); p.onAssigned(all) }
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
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
