package kafka_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestPrefixedNames: the prefix goes on topics, groups and produced
// records and comes off consumed ones, after which FromKafka checks a
// record's partition against the topic table as it does without a prefix.
func TestPrefixedNames(t *testing.T) {
	c := kafka.Config{Prefix: "prod."}
	if got := c.Topic(schemas.TopicVmCommands); got != "prod.vm.commands.v1" {
		t.Fatalf("Topic = %s", got)
	}
	if got := c.Group("vmplane-processor-vm"); got != "prod.vmplane-processor-vm" {
		t.Fatalf("Group = %s", got)
	}
	if got := c.Logical("prod.vm.events.v1"); got != schemas.TopicVmEvents {
		t.Fatalf("Logical = %s", got)
	}
	codec := schemas.NewCodec(nil)
	kr, err := kafka.ToKafka(t.Context(), codec, schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm-1",
		Value: &schemas.Start{VmCommand: schemas.VmCommand{CommandID: "c", VmID: "vm-1", Account: "a", Origin: schemas.OriginAPI}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Out(kr).Topic != "prod.vm.commands.v1" {
		t.Fatalf("Out: %s", kr.Topic)
	}
	right := schemas.PartitionOf(kr.Key, 12)
	for _, tc := range []struct {
		part      int32
		misrouted bool
	}{{right, false}, {(right + 1) % 12, true}} {
		in := &kgo.Record{Topic: "prod.vm.commands.v1", Partition: tc.part, Key: kr.Key, Value: kr.Value, Headers: kr.Headers}
		c.In([]*kgo.Record{in})
		rec, err := kafka.FromKafka(t.Context(), codec, in)
		var mis *schemas.MisroutedError
		if errors.As(err, &mis) != tc.misrouted || rec.Topic != schemas.TopicVmCommands {
			t.Errorf("partition %d: %v, topic %s", tc.part, err, rec.Topic)
		}
	}
	for _, p := range []string{"", "prod.", "team-a_", "x.y-z"} {
		if err := (kafka.Config{Prefix: p}).Validate(); err != nil {
			t.Errorf("prefix %q: %v", p, err)
		}
	}
}
