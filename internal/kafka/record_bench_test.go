package kafka

import (
	"context"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// powerReport is a storm's record: a power report as the agent sends it.
func powerReport(b *testing.B) schemas.Record {
	b.Helper()
	return schemas.Record{Topic: schemas.TopicVmPower, Key: "vm-0012345",
		Value: &schemas.PowerReport{VmID: "vm-0012345", HostID: "host-00042", PowerState: schemas.PowerOn, ReportSeq: 7, ReportedAt: 1_700_000_000_000}}
}

// BenchmarkFromKafka decodes and checks a consumed power report, as a
// processor does for every record of a reconnect storm.
func BenchmarkFromKafka(b *testing.B) {
	ctx := context.Background()
	codec := schemas.NewCodec(nil)
	kr, err := ToKafka(ctx, codec, powerReport(b))
	if err != nil {
		b.Fatal(err)
	}
	spec, _ := schemas.TopicByName(kr.Topic)
	kr.Partition = schemas.PartitionOf(kr.Key, spec.PartitionsOf())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromKafka(ctx, codec, kr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToKafka encodes a power report into a record to produce, as
// the agent does for every VM of its report round.
func BenchmarkToKafka(b *testing.B) {
	ctx := context.Background()
	codec := schemas.NewCodec(nil)
	r := powerReport(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToKafka(ctx, codec, r); err != nil {
			b.Fatal(err)
		}
	}
}
