// Package kafka owns vmplane's Kafka plumbing shared by every role: client
// options from configuration, the topic table applied with kadm, the
// embedded kfake broker, the translation between schemas.Record and
// kgo.Record (framing, `type` header), and reading a log to its end for
// tools and tests. It decides nothing about VMs.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/confluent"
)

// Config says how to reach the cluster.
type Config struct {
	Brokers []string
	// SASL/SCRAM-SHA-512 credentials; empty for none.
	User, Password string
	// RegistryURL switches the value framing to Confluent's (00 + schema id).
	RegistryURL string
	// Replication is the replication factor of created topics (1 for kfake).
	Replication int16
	// TLS encrypts the connections (and authenticates the broker).
	TLS TLS
}

// ConfigFromEnv reads VMPLANE_KAFKA_BROKERS (comma separated),
// VMPLANE_KAFKA_USER, VMPLANE_KAFKA_PASSWORD and VMPLANE_SCHEMA_REGISTRY, with
// def as the broker list when unset.
func ConfigFromEnv(getenv func(string) string, def string) Config {
	b := getenv("VMPLANE_KAFKA_BROKERS")
	if b == "" {
		b = def
	}
	return Config{
		Brokers:     strings.Split(b, ","),
		User:        getenv("VMPLANE_KAFKA_USER"),
		Password:    getenv("VMPLANE_KAFKA_PASSWORD"),
		RegistryURL: getenv("VMPLANE_SCHEMA_REGISTRY"),
		Replication: 1,
		TLS: TLS{
			Enabled:  getenv("VMPLANE_KAFKA_TLS") == "true" || getenv("VMPLANE_KAFKA_TLS_CA") != "",
			CAFile:   getenv("VMPLANE_KAFKA_TLS_CA"),
			CertFile: getenv("VMPLANE_KAFKA_TLS_CERT"),
			KeyFile:  getenv("VMPLANE_KAFKA_TLS_KEY"),
		},
	}
}

// Opts returns the client options every vmplane client starts from.
func (c Config) Opts(extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ProducerLinger(2 * time.Millisecond),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// No KIP-714 client metrics to the brokers: the roles export their
		// own (/metrics), and each push compresses into a fresh 4 MiB
		// buffer, every 30 s for every client of a role.
		kgo.DisableClientMetrics(),
		// A group member killed without leaving holds its partitions until
		// its session times out: 10 s rather than franz-go's 45 s, so that
		// a role restarted after a crash consumes again within seconds.
		// Processors set their own (engine.Config.SessionTimeout).
		kgo.SessionTimeout(10 * time.Second),
		kgo.HeartbeatInterval(2 * time.Second),
	}
	if c.User != "" {
		opts = append(opts, kgo.SASL(scram.Auth{User: c.User, Pass: c.Password}.AsSha512Mechanism()))
	}
	if c.TLS.Enabled {
		// A bad CA or certificate file fails at the first dial with the
		// file named; Opts itself has no error to return.
		o, err := c.TLS.tlsOpt()
		if err != nil {
			o = kgo.Dialer(func(context.Context, string, string) (net.Conn, error) { return nil, err })
		}
		opts = append(opts, o)
	}
	return append(opts, extra...)
}

// Codec returns the value codec this configuration asks for.
func (c Config) Codec() (*schemas.Codec, error) {
	if c.RegistryURL == "" {
		return schemas.NewCodec(nil), nil
	}
	cl, err := confluent.New(c.RegistryURL)
	if err != nil {
		return nil, fmt.Errorf("schema registry %s: %w", c.RegistryURL, err)
	}
	return schemas.NewCodec(cl), nil
}

// StateMaxBytes bounds a record of a compacted topic (a processor's state
// of one key, a host's status): a zone's placement state holds every host
// and allocation of the zone, over a megabyte (Kafka's default) from about
// a thousand hosts. A record over the limit would abort every transaction
// that writes it and stop the processor.
const StateMaxBytes = 64 << 20

// raiseMaxMessage sets a topic created before StateMaxBytes to it.
func raiseMaxMessage(ctx context.Context, adm *kadm.Client, topic string) error {
	v := strconv.Itoa(StateMaxBytes)
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return fmt.Errorf("topic %s: max.message.bytes: %w", topic, err)
	}
	return nil
}

// EnsureTopics creates the missing topics of the table with kadm. Existing
// topics are left as they are (a compacted one has its max.message.bytes
// raised to StateMaxBytes), but a partition count that breaks the
// co-partitioning rule is an error.
func EnsureTopics(ctx context.Context, cl *kgo.Client, topics []schemas.TopicSpec, replication int16) error {
	adm := kadm.NewClient(cl)
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	existing, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	for _, t := range topics {
		want := t.PartitionsOf()
		if d, ok := existing[t.Name]; ok && d.Err == nil {
			if got := int32(len(d.Partitions)); got != want {
				return fmt.Errorf("topic %s has %d partitions, the topic table says %d (co-partitioning)", t.Name, got, want)
			}
			if t.Compacted {
				if err := raiseMaxMessage(ctx, adm, t.Name); err != nil {
					return err
				}
			}
			continue
		}
		cfg := map[string]*string{}
		if t.Compacted {
			cfg["cleanup.policy"] = kadm.StringPtr("compact")
			cfg["max.message.bytes"] = kadm.StringPtr(strconv.Itoa(StateMaxBytes))
		}
		resp, err := adm.CreateTopic(ctx, want, replication, cfg, t.Name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t.Name, err)
		}
	}
	return nil
}

// ToKafka encodes r into a kgo.Record with the `type` header and r's headers.
func ToKafka(ctx context.Context, c *schemas.Codec, r schemas.Record) (*kgo.Record, error) {
	v, err := c.Encode(ctx, r.Value)
	if err != nil {
		return nil, fmt.Errorf("%s key %s: %w", r.Topic, r.Key, err)
	}
	kr := &kgo.Record{Topic: r.Topic, Key: []byte(r.Key), Value: v}
	kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: "type", Value: []byte(schemas.TypeName(r.Value))})
	for k, hv := range r.Headers {
		if k != "type" {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: k, Value: []byte(hv)})
		}
	}
	return kr, nil
}

// Produce encodes recs and produces them, waiting for every one; the error
// is the first encoding or produce error.
func Produce(ctx context.Context, cl *kgo.Client, c *schemas.Codec, recs ...schemas.Record) error {
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		kr, err := ToKafka(ctx, c, r)
		if err != nil {
			return err
		}
		krs[i] = kr
	}
	return cl.ProduceSync(ctx, krs...).FirstErr()
}

// FromKafka decodes a consumed record. It checks that a keyed record of the
// topic table is on its key's partition (a *schemas.MisroutedError), and
// that the value's type is one the topic carries and agrees with the `type`
// header; the error names topic, partition and offset.
func FromKafka(ctx context.Context, c *schemas.Codec, kr *kgo.Record) (schemas.Record, error) {
	r := schemas.Record{Topic: kr.Topic, Key: string(kr.Key), Partition: kr.Partition, Offset: kr.Offset, TimestampMs: kr.Timestamp.UnixMilli()}
	where := func(err error) error {
		return &schemas.DecodeError{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Err: err}
	}
	spec, inTable := schemas.TopicByName(kr.Topic)
	if inTable {
		if err := spec.CheckPartition(kr.Partition, kr.Key); err != nil {
			return r, where(err)
		}
	}
	var typ string
	for _, h := range kr.Headers {
		if h.Key == "type" {
			typ = string(h.Value)
			continue
		}
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		r.Headers[h.Key] = string(h.Value)
	}
	v, err := c.DecodeAt(ctx, kr.Topic, kr.Partition, kr.Offset, kr.Value)
	if err != nil {
		return r, err
	}
	name := schemas.TypeName(v)
	if typ != "" && typ != name {
		return r, where(fmt.Errorf("type header %q but the value is a %s", typ, name))
	}
	if inTable && !spec.Carries(name) {
		return r, where(fmt.Errorf("topic does not carry %s", name))
	}
	r.Value = v
	return r, nil
}

// Header returns the value of kr's first header k, "" when it has none.
func Header(kr *kgo.Record, k string) string {
	for _, h := range kr.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

// Headers of a dead letter, written by DeadLetter after the original's.
const (
	DLQError     = "dlq.error"
	DLQTopic     = "dlq.topic"
	DLQPartition = "dlq.partition"
	DLQOffset    = "dlq.offset"
	DLQConsumer  = "dlq.consumer"
	DLQAt        = "dlq.at"
)

// DeadLetter builds the dlq.v1 record for a record that cannot be processed:
// the original key and value, its headers, and the error and origin in headers.
// The original's own dlq.* headers are dropped: whoever wrote the original
// must not be able to say where its dead letter came from.
func DeadLetter(kr *kgo.Record, cause error, consumer string) *kgo.Record {
	d := &kgo.Record{Topic: schemas.TopicDLQ, Key: kr.Key, Value: kr.Value}
	for _, h := range kr.Headers {
		if !strings.HasPrefix(h.Key, "dlq.") {
			d.Headers = append(d.Headers, h)
		}
	}
	d.Headers = append(d.Headers,
		kgo.RecordHeader{Key: DLQError, Value: []byte(cause.Error())},
		kgo.RecordHeader{Key: DLQTopic, Value: []byte(kr.Topic)},
		kgo.RecordHeader{Key: DLQPartition, Value: []byte(fmt.Sprint(kr.Partition))},
		kgo.RecordHeader{Key: DLQOffset, Value: []byte(fmt.Sprint(kr.Offset))},
		kgo.RecordHeader{Key: DLQConsumer, Value: []byte(consumer)},
		kgo.RecordHeader{Key: DLQAt, Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
	)
	return d
}

// DeadLetterHeader returns the value of a dead letter's header k as the
// dead-lettering wrote it: the last one. Dead letters written before
// DeadLetter dropped the original's dlq.* headers carry those first.
func DeadLetterHeader(kr *kgo.Record, k string) string {
	v := ""
	for _, h := range kr.Headers {
		if h.Key == k {
			v = string(h.Value)
		}
	}
	return v
}

// Partitioner hashes keys like Kafka's default partitioner (murmur2), so
// every vmplane client puts a key in the same partition, except on the
// topics listed, where a record goes to the partition it names: changelogs
// must land in the partition of the input they mirror, whatever hashing
// the input's producer used.
func Partitioner(manualTopics ...string) kgo.Partitioner {
	return partitioner{base: kgo.StickyKeyPartitioner(nil), manual: manualTopics}
}

type partitioner struct {
	base   kgo.Partitioner
	manual []string
}

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	for _, m := range p.manual {
		if m == t {
			return manualPartition{}
		}
	}
	return p.base.ForTopic(t)
}

type manualPartition struct{}

func (manualPartition) RequiresConsistency(*kgo.Record) bool { return true }
func (manualPartition) Partition(r *kgo.Record, n int) int {
	if int(r.Partition) >= n {
		return n - 1
	}
	return int(r.Partition)
}

// StaticMember is the option of a static group member named
// "<group>-<instance>": a member restarted after a crash takes its
// partitions back at once, with no rebalance, instead of after the dead
// member's session timeout; a clean stop does not leave the group either.
// Nothing for an empty instance (a dynamic member).
func StaticMember(group, instance string) []kgo.Opt {
	if instance == "" {
		return nil
	}
	return []kgo.Opt{kgo.InstanceID(group + "-" + instance)}
}
