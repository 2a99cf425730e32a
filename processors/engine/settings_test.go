package engine

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// configured is the counter machine with a setting: each step emits the
// ha.max.retries in effect as the PowerStateObserved's count.
type configured struct {
	counter
	v *settings.Values
}

func (c configured) Configure(sc *schemas.SettingChanged) error {
	return c.v.Apply(sc.Name, sc.Scope, sc.ScopeID, sc.Value)
}

func (c configured) Step(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	s, outs := c.counter.Step(s, in, now)
	outs[0].Value.(*schemas.PowerStateObserved).Count = int32(c.v.Int(settings.HAMaxRetries, "", "", 0))
	return s, outs
}

func produceSetting(t *testing.T, cfg kafka.Config, value string) {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r, err := kafka.ToKafka(t.Context(), schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicSettings,
		Key:   settings.Key(settings.Global, "", settings.HAMaxRetries),
		Value: &schemas.SettingChanged{Name: settings.HAMaxRetries, Scope: settings.Global, Value: value}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A processor has every setting before it steps its first record, and
// takes a new one while it runs; a restarted one, with a fresh machine,
// decides with the settings the first had. A value out of range is a dead
// letter and changes nothing.
func TestSettingsBeforeTheFirstStep(t *testing.T) {
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	run := func(ctx context.Context, id string) (*Processor[*schemas.VmRecord], chan error) {
		p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
			Settings: schemas.TopicSettings, Kafka: cfg, InstanceID: id, Clock: clock, SessionTimeout: 2 * time.Second},
			Machine[*schemas.VmRecord](configured{counter{time.Hour}, &settings.Values{}}))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		return p, done
	}
	counts := func(evs []schemas.Record) []int {
		var out []int
		for _, e := range evs {
			if o, ok := e.Value.(*schemas.PowerStateObserved); ok {
				out = append(out, int(o.Count))
			}
		}
		return out
	}
	waitSettings := func(p *Processor[*schemas.VmRecord], n int64) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); p.Stats().Settings.Load()+p.Stats().DeadLettered.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d settings taken, want %d", p.Stats().Settings.Load(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	produceSetting(t, cfg, "7")
	produceReportsOf(t, cfg, "vm-0")
	ctx1, stop1 := context.WithCancel(t.Context())
	p1, done1 := run(ctx1, "a")
	if got := counts(readEvents(t, cfg, 1)); len(got) != 1 || got[0] != 7 {
		t.Fatalf("first step saw ha.max.retries %v, want 7", got)
	}
	produceSetting(t, cfg, "9")
	produceSetting(t, cfg, "1000")
	waitSettings(p1, 3)
	produceReportsOf(t, cfg, "vm-0")
	if got := counts(readEvents(t, cfg, 2)); len(got) != 2 || got[1] != 9 {
		t.Fatalf("step after the change saw %v, want 9 (1000 is out of range)", got)
	}
	if p1.Stats().DeadLettered.Load() != 1 {
		t.Errorf("%d dead letters, want the out-of-range setting's", p1.Stats().DeadLettered.Load())
	}
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}

	produceReportsOf(t, cfg, "vm-0")
	p2, _ := run(t.Context(), "b")
	if got := counts(readEvents(t, cfg, 3)); len(got) != 3 || got[2] != 9 {
		t.Fatalf("restarted processor's first step saw %v, want 9", got)
	}
	if n := p2.Stats().Settings.Load(); n != 2 {
		t.Errorf("restarted processor took %d settings, want the 2 valid ones", n)
	}
	dlq := pollCommitted(t, cfg, schemas.TopicDLQ, 5*time.Second)
	if len(dlq) != 1 {
		t.Errorf("dlq holds %d records, want 1", len(dlq))
	}
}
