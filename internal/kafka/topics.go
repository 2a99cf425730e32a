package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// StateMaxBytes bounds a record of a compacted topic (a processor's state
// of one key, a host's status): a zone's placement state holds every host
// and allocation of the zone, over a megabyte (Kafka's default) from about
// a thousand hosts. A record over the limit would abort every transaction
// that writes it and stop the processor.
const StateMaxBytes = 64 << 20

// TopicOptions are what the topic table leaves to the cluster.
type TopicOptions struct {
	// Replication is the replication factor of created topics, and the
	// least CheckTopics accepts; 0 leaves it to the broker
	// (default.replication.factor) and checks nothing.
	Replication int16
	// MinInsync sets min.insync.replicas on created topics; 0 leaves the
	// broker's.
	MinInsync int
}

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

// EnsureTopics creates the missing topics of the table with kadm, under
// c's prefix. Existing topics are left as they are (a compacted one has its
// max.message.bytes raised to StateMaxBytes), but a partition count that
// breaks the co-partitioning rule is an error, reported after every
// missing topic has been created. Running it again changes nothing.
func (c Config) EnsureTopics(ctx context.Context, cl *kgo.Client, topics []schemas.TopicSpec, o TopicOptions) error {
	adm := kadm.NewClient(cl)
	existing, err := adm.ListTopics(fresh(ctx), c.Topics(specNames(topics)...)...)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	rf := o.Replication
	if rf == 0 {
		rf = -1
	}
	var errs []error
	for _, t := range topics {
		name, want := c.Topic(t.Name), t.PartitionsOf()
		if d, ok := existing[name]; ok && d.Err == nil {
			if got := int32(len(d.Partitions)); got != want {
				errs = append(errs, fmt.Errorf("topic %s has %d partitions, the topic table says %d (co-partitioning)", name, got, want))
				continue
			}
			if t.Compacted {
				if err := raiseMaxMessage(ctx, adm, name); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		resp, err := adm.CreateTopic(ctx, want, rf, topicConfigs(t, o), name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// topicConfigs are the configs a topic of the table is created with.
func topicConfigs(t schemas.TopicSpec, o TopicOptions) map[string]*string {
	cfg := map[string]*string{}
	if t.Compacted {
		cfg["cleanup.policy"] = kadm.StringPtr("compact")
		cfg["max.message.bytes"] = kadm.StringPtr(strconv.Itoa(StateMaxBytes))
	}
	if o.MinInsync > 0 {
		cfg["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(o.MinInsync))
	}
	return cfg
}

// fresh makes kadm's metadata requests go to a broker: kadm answers them
// from the client's cache when it can, which would still say "missing"
// for a topic created a moment ago. Asking for the authorized operations
// is what bypasses the cache.
func fresh(ctx context.Context) context.Context { return kadm.WithAuthorizedOps(ctx) }

func specNames(topics []schemas.TopicSpec) []string {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	return names
}

// CheckTopics compares the cluster's topics with the table, under c's
// prefix, and returns every difference that would break vmplane, one line
// each: a missing topic, a partition count other than the table's, a
// cleanup.policy other than the table's (a compacted changelog that is
// deleted by age loses states; an event log that is compacted loses
// events), a compacted topic whose max.message.bytes is below
// StateMaxBytes, fewer replicas than o.Replication, a min.insync.replicas
// below o.MinInsync. None means the cluster is as vmplane needs it.
func (c Config) CheckTopics(ctx context.Context, cl *kgo.Client, topics []schemas.TopicSpec, o TopicOptions) ([]string, error) {
	adm := kadm.NewClient(cl)
	names := c.Topics(specNames(topics)...)
	described, err := adm.ListTopics(fresh(ctx), names...)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var present []string
	for _, n := range names {
		if d, ok := described[n]; ok && d.Err == nil {
			present = append(present, n)
		}
	}
	configs := map[string]map[string]string{}
	if len(present) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, present...)
		if err != nil {
			return nil, fmt.Errorf("describe topic configs: %w", err)
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return nil, fmt.Errorf("describe configs of %s: %w", rc.Name, rc.Err)
			}
			kv := map[string]string{}
			for _, e := range rc.Configs {
				if e.Value != nil {
					kv[e.Key] = *e.Value
				}
			}
			configs[rc.Name] = kv
		}
	}
	var diffs []string
	for _, t := range topics {
		name := c.Topic(t.Name)
		d, ok := described[name]
		if !ok || d.Err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: missing", name))
			continue
		}
		diffs = append(diffs, checkTopic(t, name, d, configs[name], o)...)
	}
	return diffs, nil
}

// checkTopic lists what is wrong with one existing topic.
func checkTopic(t schemas.TopicSpec, name string, d kadm.TopicDetail, cfg map[string]string, o TopicOptions) []string {
	var diffs []string
	if got, want := int32(len(d.Partitions)), t.PartitionsOf(); got != want {
		diffs = append(diffs, fmt.Sprintf("%s: %d partitions, the topic table says %d (co-partitioning)", name, got, want))
	}
	policy, want := cfg["cleanup.policy"], "delete"
	if t.Compacted {
		want = "compact"
	}
	if policy != want {
		diffs = append(diffs, fmt.Sprintf("%s: cleanup.policy=%s, want %s", name, policy, want))
	}
	if t.Compacted {
		if n, err := strconv.Atoi(cfg["max.message.bytes"]); err != nil || n < StateMaxBytes {
			diffs = append(diffs, fmt.Sprintf("%s: max.message.bytes=%s, want at least %d (a key's whole state is one record)", name, cfg["max.message.bytes"], StateMaxBytes))
		}
	}
	if o.Replication > 0 {
		fewest := -1
		for _, p := range d.Partitions {
			if n := len(p.Replicas); fewest < 0 || n < fewest {
				fewest = n
			}
		}
		if fewest >= 0 && fewest < int(o.Replication) {
			diffs = append(diffs, fmt.Sprintf("%s: replication factor %d, want at least %d", name, fewest, o.Replication))
		}
	}
	if o.MinInsync > 0 {
		if n, err := strconv.Atoi(cfg["min.insync.replicas"]); err != nil || n < o.MinInsync {
			diffs = append(diffs, fmt.Sprintf("%s: min.insync.replicas=%s, want at least %d", name, cfg["min.insync.replicas"], o.MinInsync))
		}
	}
	return diffs
}
