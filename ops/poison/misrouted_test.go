package poison

import (
	"context"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestEveryConsumerDeadLettersBrokenRecords sends, to every topic a
// processor or projector reads, a valid record on the partition librdkafka's
// default partitioner (consistent_random: CRC-32 of the key) picks where
// Kafka's murmur2 picks another, and a valid record on its key's partition
// whose `type` header names another record. Every consumer of the topic
// must move past both and leave a dead letter for each, whose dlq.error
// says what is wrong: for the first, the key, the partition it is on and
// the one it belongs to.
func TestEveryConsumerDeadLettersBrokenRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the broker, Postgres and ClickHouse")
	}
	w := startWorld(t)
	type sent struct {
		topic     string
		partition int32
		offset    int64
		want      string // in every consumer's dlq.error
	}
	var all []sent
	for _, topic := range w.topics {
		spec, _ := schemas.TopicByName(topic)
		n := spec.PartitionsOf()
		v, ok := schemas.New(spec.Types[0])
		if !ok {
			t.Fatalf("no record %s", spec.Types[0])
		}
		value, err := w.codec.Encode(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		if n > 1 {
			key, crc := librdkafkaMisroutes(n)
			want := schemas.PartitionOf([]byte(key), n)
			kr := &kgo.Record{Topic: topic, Key: []byte(key), Value: value, Partition: crc,
				Headers: []kgo.RecordHeader{{Key: "type", Value: []byte(spec.Types[0])}}}
			w.send(t, kr, "a misrouted "+spec.Types[0])
			all = append(all, sent{topic, kr.Partition, kr.Offset,
				fmt.Sprintf("key %q is on partition %d of %s but belongs on partition %d of %d", key, crc, topic, want, n)})
		}
		liar := "AccountCreated"
		if spec.Carries(liar) {
			liar = "PowerReport"
		}
		key := []byte("vm-typed")
		kr := &kgo.Record{Topic: topic, Key: key, Value: value, Partition: schemas.PartitionOf(key, n),
			Headers: []kgo.RecordHeader{{Key: "type", Value: []byte(liar)}}}
		w.send(t, kr, "a "+spec.Types[0]+" with the type header "+liar)
		all = append(all, sent{topic, kr.Partition, kr.Offset,
			fmt.Sprintf("type header %q but the value is a %s", liar, spec.Types[0])})
	}

	// Each consumer's dead letter of each record, by "consumer topic/partition@offset".
	dead := map[string]string{}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := kafka.ReadToEnd(ctx, w.kcfg, []string{schemas.TopicDLQ}, func(kr *kgo.Record) error {
		h := func(k string) string { return kafka.DeadLetterHeader(kr, k) }
		dead[fmt.Sprintf("%s %s/%s@%s", h(kafka.DLQConsumer), h(kafka.DLQTopic), h(kafka.DLQPartition), h(kafka.DLQOffset))] = h(kafka.DLQError)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		for _, c := range w.readers[s.topic] {
			got, ok := dead[fmt.Sprintf("%s %s/%d@%d", c.group, s.topic, s.partition, s.offset)]
			switch {
			case !ok:
				t.Errorf("%s left no dead letter for %s/%d@%d (want %q)", c.group, s.topic, s.partition, s.offset, s.want)
			case !strings.Contains(got, s.want):
				t.Errorf("%s dead-lettered %s/%d@%d with %q, want %q in it", c.group, s.topic, s.partition, s.offset, got, s.want)
			}
		}
	}
}

// librdkafkaMisroutes returns a VM-like key that librdkafka's default
// partitioner puts on another partition of n than Kafka's murmur2, and the
// partition librdkafka picks.
func librdkafkaMisroutes(n int32) (string, int32) {
	for i := 0; ; i++ {
		key := fmt.Sprintf("vm-%d", i)
		crc := int32(crc32.ChecksumIEEE([]byte(key)) % uint32(n))
		if crc != schemas.PartitionOf([]byte(key), n) {
			return key, crc
		}
	}
}
