package kafka_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestDeadLetterDropsForgedOrigin: a record whose writer put dlq.* headers
// on it (here: claiming to come from vm.commands.v1) is dead-lettered with
// its true origin only; its other headers are kept.
func TestDeadLetterDropsForgedOrigin(t *testing.T) {
	kr := &kgo.Record{Topic: schemas.TopicVmPower, Partition: 3, Offset: 41, Key: []byte("vm-1"), Value: []byte("v"),
		Headers: []kgo.RecordHeader{
			{Key: "type", Value: []byte("Terminate")},
			{Key: kafka.DLQTopic, Value: []byte(schemas.TopicVmCommands)},
			{Key: kafka.DLQPartition, Value: []byte("0")},
			{Key: "dlq.redrive-of", Value: []byte("0@0")},
			{Key: "traceparent", Value: []byte("00-abc")},
		}}
	d := kafka.DeadLetter(kr, errors.New("topic does not carry Terminate"), "vmplane-processor-vm")
	seen := map[string]int{}
	for _, h := range d.Headers {
		seen[h.Key]++
	}
	for _, k := range []string{kafka.DLQTopic, kafka.DLQPartition, kafka.DLQOffset, kafka.DLQError, kafka.DLQConsumer, kafka.DLQAt} {
		if seen[k] != 1 {
			t.Errorf("%s appears %d times, want once", k, seen[k])
		}
	}
	if seen["dlq.redrive-of"] != 0 || seen["type"] != 1 || seen["traceparent"] != 1 {
		t.Errorf("headers %v", d.Headers)
	}
	for k, want := range map[string]string{kafka.DLQTopic: schemas.TopicVmPower, kafka.DLQPartition: "3", kafka.DLQOffset: "41"} {
		if got := kafka.Header(d, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// TestDeadLetterHeaderTakesTheLast: a dead letter written before the
// original's dlq.* headers were dropped carries the forged one first; the
// reader takes the one the dead-lettering wrote, the last.
func TestDeadLetterHeaderTakesTheLast(t *testing.T) {
	d := &kgo.Record{Topic: schemas.TopicDLQ, Headers: []kgo.RecordHeader{
		{Key: kafka.DLQTopic, Value: []byte(schemas.TopicVmCommands)},
		{Key: kafka.DLQError, Value: []byte("decode")},
		{Key: kafka.DLQTopic, Value: []byte(schemas.TopicVmPower)},
	}}
	if got := kafka.DeadLetterHeader(d, kafka.DLQTopic); got != schemas.TopicVmPower {
		t.Fatalf("dlq.topic = %q, want %s", got, schemas.TopicVmPower)
	}
	if got := kafka.DeadLetterHeader(d, "dlq.consumer"); got != "" {
		t.Fatalf("a missing header reads %q", got)
	}
}
