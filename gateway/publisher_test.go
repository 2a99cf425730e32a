package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestKafkaPublisherRoundTrip publishes a command to a real (kfake) broker
// and consumes it back: key, type and command_id headers, decoded value.
func TestKafkaPublisherRoundTrip(t *testing.T) {
	ctx := t.Context()
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := kafka.Config{Brokers: b.Addrs()}

	pub, err := gateway.NewKafkaPublisher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := cfg.EnsureTopics(ctx, pub.Client(), schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	// The record is built by the real handler path, so what reaches Kafka
	// is what a deploy request produces.
	e := newEnv(t, gateway.Config{})
	rec := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop","force":true}`)
	wantStatus(t, rec, 202)
	sent := e.pub.Records()[0]
	if err := pub.Publish(ctx, sent); err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(cfg.Opts(kgo.ConsumeTopics(schemas.TopicVmCommands), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	codec, err := cfg.Codec()
	if err != nil {
		t.Fatal(err)
	}
	pollCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) == 0 && pollCtx.Err() == nil {
		fs := cl.PollFetches(pollCtx)
		fs.EachError(func(topic string, p int32, err error) {
			if pollCtx.Err() == nil {
				t.Fatalf("fetch %s/%d: %v", topic, p, err)
			}
		})
		got = append(got, fs.Records()...)
	}
	if len(got) != 1 {
		t.Fatalf("consumed %d records, want 1", len(got))
	}
	kr := got[0]
	headers := map[string]string{}
	for _, h := range kr.Headers {
		headers[h.Key] = string(h.Value)
	}
	if string(kr.Key) != "vm-a1" || headers["type"] != "Stop" || headers["command_id"] != sent.Headers["command_id"] || headers["command_id"] == "" {
		t.Fatalf("key %q headers %v", kr.Key, headers)
	}
	back, err := kafka.FromKafka(ctx, codec, kr)
	if err != nil {
		t.Fatal(err)
	}
	stop, ok := back.Value.(*schemas.Stop)
	if !ok || !equalJSON(t, *stop, *sent.Value.(*schemas.Stop)) {
		t.Fatalf("decoded %#v, sent %#v", back.Value, sent.Value)
	}
}
