package kafka_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
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
	if err := (kafka.Config{}).EnsureTopics(t.Context(), cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
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

// TestCheckTopicsListsEveryDifference: on a three-broker cluster whose
// topics an operator made by hand, CheckTopics names each difference from
// the table — missing, partitions, cleanup.policy, max.message.bytes,
// replicas, min.insync.replicas — and none once EnsureTopics made them.
func TestCheckTopicsListsEveryDifference(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := kafka.Config{Brokers: c.ListenAddrs()}
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	create := func(name string, parts int32, rf int16, kv map[string]*string) {
		t.Helper()
		resp, err := adm.CreateTopic(t.Context(), parts, rf, kv, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	compact := kadm.StringPtr("compact")
	create(schemas.TopicVmCommands, 12, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	create(schemas.TopicVmEvents, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	create(schemas.TopicVmState, 12, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	create(schemas.TopicHostStatus, 6, 3, map[string]*string{"cleanup.policy": compact, "min.insync.replicas": kadm.StringPtr("2")})
	create(schemas.TopicAccounts, 1, 3, map[string]*string{"cleanup.policy": compact})

	o := kafka.TopicOptions{Replication: 3, MinInsync: 2}
	diffs, err := cfg.CheckTopics(t.Context(), cl, schemas.Topics, o)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(diffs, "\n")
	for _, want := range []string{
		"vm.events.v1: 6 partitions, the topic table says 12",
		"vm.state.v1: cleanup.policy=delete, want compact",
		"vm.state.v1: max.message.bytes=1048588, want at least 67108864",
		"vm.state.v1: replication factor 1, want at least 3",
		"host.status.v1: max.message.bytes=1048588, want at least 67108864",
		"accounts.v1: cleanup.policy=compact, want delete",
		"accounts.v1: min.insync.replicas=1, want at least 2",
		"placement.state.v1: missing",
		"dlq.v1: missing",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "vm.commands.v1") {
		t.Errorf("vm.commands.v1 is as the table says, yet:\n%s", got)
	}
	if n := len(schemas.Topics) - 5 + 7; len(diffs) != n {
		t.Errorf("%d differences, want %d:\n%s", len(diffs), n, got)
	}

	// Under a prefix the same cluster has none of vmplane's topics; made,
	// they are as the table says, and making them again changes nothing.
	prod := kafka.Config{Brokers: c.ListenAddrs(), Prefix: "prod."}
	if diffs, _ := prod.CheckTopics(t.Context(), cl, schemas.Topics, o); len(diffs) != len(schemas.Topics) || diffs[0] != "prod.vm.commands.v1: missing" {
		t.Fatalf("prefixed before creation: %q", diffs)
	}
	for range 2 {
		if err := prod.EnsureTopics(t.Context(), cl, schemas.Topics, o); err != nil {
			t.Fatal(err)
		}
		if diffs, err := prod.CheckTopics(t.Context(), cl, schemas.Topics, o); err != nil || len(diffs) != 0 {
			t.Fatalf("prefixed after creation: %q, %v", diffs, err)
		}
	}
	// EnsureTopics creates what is missing and reports the
	// co-partitioning break after.
	err = cfg.EnsureTopics(t.Context(), cl, schemas.Topics, kafka.TopicOptions{Replication: 3})
	if err == nil || !strings.Contains(err.Error(), "topic vm.events.v1 has 6 partitions") {
		t.Fatalf("EnsureTopics over a broken vm.events.v1: %v", err)
	}
	if diffs, _ := cfg.CheckTopics(t.Context(), cl, schemas.Topics, kafka.TopicOptions{}); strings.Contains(strings.Join(diffs, "\n"), "missing") {
		t.Errorf("missing after EnsureTopics: %q", diffs)
	}
}
