package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// TestProduceThenAnswersOnce checks the asynchronous answer: then is called
// once, with nil after the broker took every record; and while the broker
// holds a produce, not before ctx ends, then at once with ctx's error and
// never again when the broker lets the records through.
func TestProduceThenAnswersOnce(t *testing.T) {
	kcfg, b := testkit.Kafka(t)
	var hold atomic.Bool
	release := make(chan struct{})
	b.Cluster().ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if hold.Load() {
			<-release
		}
		return nil, nil, false
	})
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ProducerLinger(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// The broker's loop waits in the control function while it holds a
	// produce: let it go before the client and the broker close, also
	// when the test fails while holding.
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(let)
	a := &Agent{cl: cl, codec: schemas.NewCodec(nil)}
	recs := []schemas.Record{
		{Topic: schemas.TopicVmAnswers, Key: "vm-1", Value: &schemas.AgentAnswer{CommandID: "c1", VmID: "vm-1", HostID: "h1", OK: true, PowerState: schemas.PowerOn}},
		{Topic: schemas.TopicVmPower, Key: "vm-1", Value: &schemas.PowerReport{VmID: "vm-1", HostID: "h1", PowerState: schemas.PowerOn, ReportSeq: 1}},
	}
	calls := make(chan error, 4)
	then := func(err error) { calls <- err }
	none := func(what string, d time.Duration) {
		t.Helper()
		select {
		case err := <-calls:
			t.Fatalf("%s: then called (err %v)", what, err)
		case <-time.After(d):
		}
	}

	a.produceThen(t.Context(), recs, then)
	select {
	case err := <-calls:
		if err != nil {
			t.Fatalf("then(%v), want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("then not called in 10 s")
	}
	none("after the records were taken", 200*time.Millisecond)

	hold.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	a.produceThen(ctx, recs, then)
	none("while the broker holds the produce", 300*time.Millisecond)
	cancel()
	select {
	case err := <-calls:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("then(%v) after ctx ended, want context.Canceled", err)
		}
	case <-time.After(time.Second):
		t.Fatal("then not called within 1 s of ctx ending")
	}
	hold.Store(false)
	let()
	none("after the broker let the records through", 500*time.Millisecond)
}
