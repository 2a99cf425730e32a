package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// recorder counts what the hooks are told.
type recorder struct {
	NopHooks
	mu                          sync.Mutex
	steps, unpaired, dead, tick int
	commits, keys               int
}

type stepKey struct{}

func (r *recorder) OnStep(ctx context.Context, in schemas.Record) context.Context {
	return context.WithValue(ctx, stepKey{}, in.Offset)
}

func (r *recorder) OnStepped(ctx context.Context, in schemas.Record, outs []schemas.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps++
	if ctx.Value(stepKey{}) != in.Offset || len(outs) != 1 {
		r.unpaired++
	}
}

func (r *recorder) OnTick(key string, outs []schemas.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == "vm-0" && len(outs) == 1 {
		r.tick++
	}
}

func (r *recorder) OnDeadLetter(kr *kgo.Record, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && string(kr.Value) == "garbage bytes" {
		r.dead++
	}
}

func (r *recorder) OnEnd(_ time.Duration, committed bool, keys int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if committed {
		r.commits++
		r.keys = keys
	}
}

func (r *recorder) seen() recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return recorder{steps: r.steps, unpaired: r.unpaired, dead: r.dead, tick: r.tick, commits: r.commits, keys: r.keys}
}

// The hooks see every step with the context their OnStep made, the dead
// letter, the timer and the commits, with the keys held.
func TestHooksSeeTheLoop(t *testing.T) {
	_, cfg := startBroker(t)
	produceGarbage(t, cfg)
	produceReports(t, cfg, 1, 2)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	rec := &recorder{}
	p, err := New(Config{Name: "hooked", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "a", Clock: clock, SessionTimeout: 2 * time.Second, Hooks: rec},
		Machine[*schemas.VmRecord](counter{alarmAfter: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	go p.Run(t.Context())
	readEvents(t, cfg, 2)
	clock.Add(2 * time.Hour)
	readEvents(t, cfg, 3)
	got := rec.seen()
	if got.steps != 2 || got.unpaired != 0 || got.dead != 1 || got.tick != 1 || got.commits == 0 || got.keys != 1 {
		t.Fatalf("hooks saw %d steps (%d without their context or output), %d dead letters, %d ticks, %d commits with %d keys; want 2 (0), 1, 1, ≥ 1 with 1",
			got.steps, got.unpaired, got.dead, got.tick, got.commits, got.keys)
	}
}
