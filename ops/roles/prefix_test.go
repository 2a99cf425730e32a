package roles

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestDeployUnderTopicPrefix runs a deploy through every processor, the
// sim agent and the Postgres projector on a broker where only topics
// under "prod." exist (a shared cluster), and checks that nothing vmplane
// made on the cluster lacks the prefix: topics, consumer groups,
// transactional ids. A record put on another partition than its key's is
// still dead-lettered (FromKafka checks partitions by the logical name),
// with the logical name as its dlq.topic.
func TestDeployUnderTopicPrefix(t *testing.T) {
	const prefix = "prod."
	l := newLifecycleUnder(t, prefix)
	l.deploy("vm-p1")
	l.succeeded("deploy-vm-p1")
	var state string
	waitRow(t, func() bool {
		return l.db.QueryRow(t.Context(), `SELECT vm_state FROM vms WHERE id = 'vm-p1'`).Scan(&state) == nil && state == "Active"
	})

	// A Deploy on a partition other than its key's.
	key := []byte("vm-misrouted")
	spec, _ := schemas.TopicByName(schemas.TopicVmCommands)
	wrong := (schemas.PartitionOf(key, spec.PartitionsOf()) + 1) % spec.PartitionsOf()
	kr, err := kafka.ToKafka(t.Context(), schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmCommands, Key: string(key),
		Value: &schemas.Deploy{VmCommand: l.cmd("deploy-misrouted", string(key)), Name: "m", ZoneID: "zone-1",
			Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}}})
	if err != nil {
		t.Fatal(err)
	}
	kr.Partition = wrong
	manual, err := kgo.NewClient(l.kcfg.Opts(kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	if err := manual.ProduceSync(t.Context(), l.kcfg.Out(kr)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for found := false; !found; {
		if time.Now().After(deadline) {
			t.Fatal("the misrouted Deploy was never dead-lettered")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := kafka.ReadToEnd(ctx, l.kcfg, []string{schemas.TopicDLQ}, func(d *kgo.Record) error {
			if string(d.Key) == string(key) && kafka.DeadLetterHeader(d, kafka.DLQTopic) == schemas.TopicVmCommands &&
				strings.Contains(kafka.DeadLetterHeader(d, kafka.DLQError), "partition") {
				found = true
			}
			return nil
		})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	adm := kadm.NewClient(l.cl)
	topics, err := adm.ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	groups, err := adm.ListGroups(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	txns, err := adm.ListTransactions(t.Context(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{"topic": topics.Names(), "group": groups.Groups(), "transactional id": txns.TransactionalIDs()}
	for what, ns := range names {
		if len(ns) == 0 {
			t.Errorf("no %s on the cluster", what)
		}
		for _, n := range ns {
			if !strings.HasPrefix(n, prefix) {
				t.Errorf("%s %q lacks the prefix %s", what, n, prefix)
			}
		}
	}
	t.Logf("under %s: %d topics, groups %v, transactional ids %v", prefix, len(topics), groups.Groups(), txns.TransactionalIDs())
}
