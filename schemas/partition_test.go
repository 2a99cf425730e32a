package schemas

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMurmur2IsKafkas holds murmur2 to the vectors of Kafka's own test of
// Utils.murmur2 (the Java client's default partitioner).
func TestMurmur2IsKafkas(t *testing.T) {
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := int32(murmur2([]byte(key))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestPartitionOfIsFranzGos holds PartitionOf to the partitioner the Go
// producers use, for keys of every length class and partition count.
func TestPartitionOfIsFranzGos(t *testing.T) {
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := range 2000 {
		key := []byte(strings.Repeat("x", i%7) + fmt.Sprintf("vm-%d", i))
		for _, n := range []int32{1, 3, 6, 12} {
			want := int32(p.Partition(&kgo.Record{Key: key}, int(n)))
			if got := PartitionOf(key, n); got != want {
				t.Fatalf("PartitionOf(%q, %d) = %d, franz-go says %d", key, n, got, want)
			}
		}
	}
}

func TestCheckPartition(t *testing.T) {
	vmPower, _ := TopicByName(TopicVmPower)
	catalog, _ := TopicByName(TopicCatalog)
	dlq, _ := TopicByName(TopicDLQ)
	key := []byte("vm-1")
	right := PartitionOf(key, vmPower.PartitionsOf())
	wrong := (right + 1) % vmPower.PartitionsOf()
	for _, c := range []struct {
		name      string
		spec      TopicSpec
		partition int32
		key       []byte
		misrouted bool
	}{
		{"the key's partition", vmPower, right, key, false},
		{"another partition", vmPower, wrong, key, true},
		{"no key", vmPower, wrong, nil, false},
		{"a topic of one partition", catalog, 0, key, false},
		{"dead letters keep their origin's key", dlq, 0, []byte("vm-x"), false},
	} {
		err := c.spec.CheckPartition(c.partition, c.key)
		var m *MisroutedError
		if errors.As(err, &m) != c.misrouted {
			t.Errorf("%s: err = %v", c.name, err)
		}
		if c.misrouted {
			want := fmt.Sprintf(`key "vm-1" is on partition %d of vm.power.v1 but belongs on partition %d of 12`, wrong, right)
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "murmur2_random") {
				t.Errorf("%s: %q does not say %q and the librdkafka setting", c.name, err, want)
			}
		}
	}
}

// A part of a state is on its state key's partition, which is not its own
// key's hash: it is checked with its state key.
func TestCheckPartitionOfAPart(t *testing.T) {
	spec, _ := TopicByName(TopicPlacementState)
	n := spec.PartitionsOf()
	home := PartitionOf([]byte("zone-1"), n)
	var k []byte
	for i := 0; k == nil || PartitionOf(k, n) == home; i++ {
		k = []byte(PartKey("zone-1", fmt.Sprintf("host:h-%d", i)))
	}
	if err := spec.CheckPartition(home, k); err != nil {
		t.Fatal(err)
	}
	if err := spec.CheckPartition((home+1)%n, k); err == nil {
		t.Fatal("a part off its state key's partition passes")
	}
}

// A key of an input that holds the parts' separator is refused, on any
// partition: the processor would make a state of it whose changelog key
// is another state's part (the header of "zone-1\x00vm:X" is zone-1's
// part vm:X).
func TestCheckPartitionRefusesAPartKeyOfAnInput(t *testing.T) {
	spec, _ := TopicByName(TopicPlacementRequests)
	key := []byte(PartKey("zone-1", "vm:X"))
	for p := range spec.PartitionsOf() {
		err := spec.CheckPartition(p, key)
		if err == nil || !strings.Contains(err.Error(), "NUL") {
			t.Fatalf("partition %d: %v, want the key refused for its NUL byte", p, err)
		}
	}
}
