package roles

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/processors/engine"
)

// client is a plain Kafka client for a test, closed when it ends.
func client(t *testing.T, kcfg kafka.Config) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// startProcessors runs processors of the given kinds until the test ends.
func startProcessors(t *testing.T, o Options, set Settings, clock engine.Clock, kinds ...string) {
	t.Helper()
	for _, kind := range kinds {
		p, err := NewProcessor(kind, o, set, clock)
		if err != nil {
			t.Fatal(err)
		}
		go p.Run(t.Context())
	}
}
