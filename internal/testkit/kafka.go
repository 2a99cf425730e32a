package testkit

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// Kafka starts an embedded broker for one test with every topic of the
// topic table, and stops it when the test ends. It skips under -short.
func Kafka(t testing.TB) (kafka.Config, *kafka.Broker) {
	t.Helper()
	return KafkaPrefixed(t, "")
}

// KafkaPrefixed is Kafka on a shared cluster: the topics exist only under
// prefix ("prod." makes prod.vm.commands.v1), and the configuration it
// returns has the prefix.
func KafkaPrefixed(t testing.TB, prefix string) (kafka.Config, *kafka.Broker) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cfg := kafka.Config{Brokers: b.Addrs(), Prefix: prefix}
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cfg.EnsureTopics(t.Context(), cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	return cfg, b
}
