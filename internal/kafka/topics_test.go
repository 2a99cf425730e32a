package kafka_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestCompactedTopicsTakeLargeStates: a compacted topic takes records of
// up to StateMaxBytes, whether EnsureTopics created it or found it with
// the broker's default (a log created by an older vmplane).
func TestCompactedTopicsTakeLargeStates(t *testing.T) {
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// An older log: placement.state.v1 with the default limit.
	if _, err := adm.CreateTopic(t.Context(), 3, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, schemas.TopicPlacementState); err != nil {
		t.Fatal(err)
	}
	if err := kafka.EnsureTopics(t.Context(), cl, schemas.Topics, 1); err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(kafka.StateMaxBytes)
	for _, topic := range []string{schemas.TopicPlacementState, schemas.TopicVmState} {
		rc, err := adm.DescribeTopicConfigs(t.Context(), topic)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rc.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, kv := range c.Configs {
			if kv.Key == "max.message.bytes" && kv.Value != nil {
				got = *kv.Value
			}
		}
		if got != want {
			t.Errorf("%s max.message.bytes = %q, want %s", topic, got, want)
		}
	}
}
