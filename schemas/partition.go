package schemas

import (
	"bytes"
	"fmt"
)

// Partitioning is part of the contract: a keyed record belongs to the
// partition Kafka's default partitioner gives its key, murmur2 of the key's
// bytes, sign bit cleared, modulo the topic's partition count (the Java
// client's default, franz-go's StickyKeyPartitioner, librdkafka's
// partitioner=murmur2_random, kafkajs's DefaultPartitioner). A processor
// keeps a key's state per partition, so a record elsewhere would be applied
// to a state that is not the key's: consumers refuse it (MisroutedError).

// PartitionOf returns the partition a key belongs to among n.
func PartitionOf(key []byte, n int32) int32 {
	if n <= 1 {
		return 0
	}
	return int32(murmur2(key)&0x7fffffff) % n
}

// murmur2 is Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2):
// seed 0x9747b28c, 4-byte little-endian blocks.
func murmur2(b []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	h := uint32(seed) ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		b = b[4:]
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// MisroutedError is a keyed record on a partition its key does not hash to.
type MisroutedError struct {
	Topic      string
	Key        string
	Partition  int32 // where the record is
	Want       int32 // where its key belongs
	Partitions int32
}

func (e *MisroutedError) Error() string {
	return fmt.Sprintf("key %q is on partition %d of %s but belongs on partition %d of %d: "+
		"keys are partitioned with Kafka's murmur2 (librdkafka: partitioner=murmur2_random; see docs/agents.md)",
		e.Key, e.Partition, e.Topic, e.Want, e.Partitions)
}

// CheckPartition returns a *MisroutedError when a record of the topic with
// a non-empty key is not on its key's partition. Records without a key, and
// those of dlq.v1 (which keep the key of their origin), are not checked. A
// part of a state (PartKey) belongs on its state key's partition; only a
// compacted topic holds parts, and a key of another topic that holds the
// separator is refused: a processor would make a state of it whose
// changelog key is another state's part.
func (t TopicSpec) CheckPartition(partition int32, key []byte) error {
	if len(key) == 0 || t.Name == TopicDLQ {
		return nil
	}
	if k, _, part := bytes.Cut(key, []byte(partSeparator)); part {
		if !t.Compacted {
			return fmt.Errorf("key %q of %s holds a NUL byte, which no id does", key, t.Name)
		}
		key = k
	}
	n := t.PartitionsOf()
	if want := PartitionOf(key, n); want != partition {
		return &MisroutedError{Topic: t.Name, Key: string(key), Partition: partition, Want: want, Partitions: n}
	}
	return nil
}
