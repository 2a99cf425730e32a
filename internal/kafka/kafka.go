// Package kafka owns vmplane's Kafka plumbing shared by every role: client
// options from configuration, the topic table applied with kadm, the
// embedded kfake broker, the translation between schemas.Record and
// kgo.Record (framing, `type` header), and reading a log to its end for
// tools and tests. It decides nothing about VMs.
package kafka

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/secret"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/confluent"
)

// Config says how to reach the cluster.
type Config struct {
	Brokers []string
	// SASL: Mechanism is one of the Mech* constants; empty means
	// SCRAM-SHA-512 when User is set, OAUTHBEARER when OAuth is, else none.
	Mechanism      string
	User, Password string
	OAuth          OAuth
	// SASLWithoutTLS allows PLAIN and OAUTHBEARER, which send the secret
	// itself, over plain TCP (a test, a loopback broker).
	SASLWithoutTLS bool
	// RegistryURL switches the value framing to Confluent's (00 + schema id).
	RegistryURL string
	// TLS encrypts the connections (and authenticates the broker).
	TLS TLS
	// Prefix is put before every topic name, consumer group and
	// transactional id on the cluster (names.go): "prod." makes
	// prod.vm.commands.v1. Empty for none.
	Prefix string
}

// ConfigFromEnv reads VMPLANE_KAFKA_BROKERS (comma separated, def when
// unset), the SASL settings (VMPLANE_KAFKA_SASL_MECHANISM,
// VMPLANE_KAFKA_USER, VMPLANE_KAFKA_PASSWORD, VMPLANE_KAFKA_OAUTH_*), the TLS
// settings (VMPLANE_KAFKA_TLS*), VMPLANE_SCHEMA_REGISTRY and
// VMPLANE_TOPIC_PREFIX. Secrets may be given as files instead
// (VMPLANE_KAFKA_PASSWORD_FILE, VMPLANE_KAFKA_OAUTH_CLIENT_SECRET_FILE).
func ConfigFromEnv(getenv func(string) string, def string) (Config, error) {
	b := getenv("VMPLANE_KAFKA_BROKERS")
	if b == "" {
		b = def
	}
	password, err := secret.FromEnv(getenv, "VMPLANE_KAFKA_PASSWORD")
	if err != nil {
		return Config{}, err
	}
	clientSecret, err := secret.FromEnv(getenv, "VMPLANE_KAFKA_OAUTH_CLIENT_SECRET")
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Brokers:        strings.Split(b, ","),
		Mechanism:      getenv("VMPLANE_KAFKA_SASL_MECHANISM"),
		User:           getenv("VMPLANE_KAFKA_USER"),
		Password:       password,
		SASLWithoutTLS: getenv("VMPLANE_KAFKA_SASL_WITHOUT_TLS") == "true",
		OAuth: OAuth{
			Token:        getenv("VMPLANE_KAFKA_OAUTH_TOKEN"),
			TokenFile:    getenv("VMPLANE_KAFKA_OAUTH_TOKEN_FILE"),
			TokenURL:     getenv("VMPLANE_KAFKA_OAUTH_TOKEN_URL"),
			ClientID:     getenv("VMPLANE_KAFKA_OAUTH_CLIENT_ID"),
			ClientSecret: clientSecret,
			Scope:        getenv("VMPLANE_KAFKA_OAUTH_SCOPE"),
		},
		RegistryURL: getenv("VMPLANE_SCHEMA_REGISTRY"),
		TLS: TLS{
			Enabled:  getenv("VMPLANE_KAFKA_TLS") == "true" || getenv("VMPLANE_KAFKA_TLS_CA") != "",
			CAFile:   getenv("VMPLANE_KAFKA_TLS_CA"),
			CertFile: getenv("VMPLANE_KAFKA_TLS_CERT"),
			KeyFile:  getenv("VMPLANE_KAFKA_TLS_KEY"),
		},
		Prefix: getenv("VMPLANE_TOPIC_PREFIX"),
	}
	return c, c.Validate()
}

// Validate says what is wrong with the configuration before a client
// dials: an unknown SASL mechanism, PLAIN without TLS, an illegal prefix.
func (c Config) Validate() error {
	if _, err := c.mechanism(); err != nil {
		return err
	}
	return checkPrefix(c.Prefix)
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
	// A configuration Validate refuses, or a bad CA or certificate file,
	// fails at the first dial with the reason; Opts has no error to return.
	var failed error
	mech, err := c.mechanism()
	if err != nil {
		failed = err
	} else if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	if c.TLS.Enabled {
		o, err := c.TLS.tlsOpt()
		if err != nil {
			failed = err
		} else {
			opts = append(opts, o)
		}
	}
	if failed != nil {
		opts = append(opts, kgo.Dialer(func(context.Context, string, string) (net.Conn, error) { return nil, failed }))
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

// ToKafka encodes r into a kgo.Record with the `type` header and r's headers.
func ToKafka(ctx context.Context, c *schemas.Codec, r schemas.Record) (*kgo.Record, error) {
	// The key and the value share one allocation; a value past the guess
	// moves once.
	kv := append(make([]byte, 0, len(r.Key)+valueGuess), r.Key...)
	kv, err := c.AppendEncode(ctx, kv, r.Value)
	if err != nil {
		return nil, fmt.Errorf("%s key %s: %w", r.Topic, r.Key, err)
	}
	n := len(r.Key)
	kr := &kgo.Record{Topic: r.Topic, Key: kv[:n:n], Value: kv[n:len(kv):len(kv)]}
	kr.Headers = make([]kgo.RecordHeader, 1, 1+len(r.Headers))
	kr.Headers[0] = kgo.RecordHeader{Key: "type", Value: []byte(schemas.TypeName(r.Value))}
	for k, hv := range r.Headers {
		if k != "type" {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: k, Value: []byte(hv)})
		}
	}
	return kr, nil
}

// valueGuess is the room ToKafka leaves for a value beside its key: a
// power report fits, a VM's snapshot event does not.
const valueGuess = 64

// Produce encodes recs and produces them under c's physical topic names,
// waiting for every one; the error is the first encoding or produce error.
func (c Config) Produce(ctx context.Context, cl *kgo.Client, codec *schemas.Codec, recs ...schemas.Record) error {
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		kr, err := ToKafka(ctx, codec, r)
		if err != nil {
			return err
		}
		krs[i] = c.Out(kr)
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
	var typ []byte
	for _, h := range kr.Headers {
		if h.Key == "type" {
			typ = h.Value
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
	if len(typ) > 0 && string(typ) != name {
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
