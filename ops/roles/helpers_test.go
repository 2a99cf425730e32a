package roles

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
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
