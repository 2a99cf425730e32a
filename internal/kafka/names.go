package kafka

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Names on a shared cluster. The topic table (schemas.Topics) and every
// schemas.Record name topics by their logical names ("vm.commands.v1");
// Config.Prefix ("prod.") makes the physical names the brokers know
// ("prod.vm.commands.v1"), and the consumer groups and transactional ids
// ("prod.vmplane-processor-vm"), so that several installs share a cluster
// and its ACLs can be granted by prefix. Names are translated where vmplane
// meets kgo and kadm, and nowhere else: what a client is told to consume,
// produce or list is physical (Topic, Topics, Group, Out), what a poll
// returns is made logical before anything reads it (In). Headers keep
// logical names: a dead letter's dlq.topic says which vmplane topic a record
// came from whatever the install's prefix, and a redrive puts it back on
// that topic under the redriving install's prefix.

// prefixChars are what a topic name may hold (Kafka's legal characters).
var prefixChars = regexp.MustCompile(`^[A-Za-z0-9._-]*$`)

// checkPrefix refuses a prefix that would make illegal topic names.
func checkPrefix(p string) error {
	if !prefixChars.MatchString(p) {
		return fmt.Errorf("topic prefix %q: a topic name holds only letters, digits, '.', '_' and '-'", p)
	}
	if len(p) > 200 {
		return fmt.Errorf("topic prefix %q: %d characters, topic names end at 249", p, len(p))
	}
	return nil
}

// Topic returns the physical name of a logical topic.
func (c Config) Topic(logical string) string { return c.Prefix + logical }

// Topics returns the physical names of logical topics.
func (c Config) Topics(logical ...string) []string {
	out := make([]string, len(logical))
	for i, t := range logical {
		out[i] = c.Prefix + t
	}
	return out
}

// Logical returns the logical name of a physical topic. A name without the
// prefix is returned as it is (a topic of no vmplane table: a benchmark's).
func (c Config) Logical(physical string) string { return strings.TrimPrefix(physical, c.Prefix) }

// Group returns the physical name of a consumer group or transactional id.
func (c Config) Group(id string) string { return c.Prefix + id }

// Offsets returns a ConsumePartitions map with physical topic names.
func (c Config) Offsets(logical map[string]map[int32]kgo.Offset) map[string]map[int32]kgo.Offset {
	out := make(map[string]map[int32]kgo.Offset, len(logical))
	for t, ps := range logical {
		out[c.Prefix+t] = ps
	}
	return out
}

// Out gives a record about to be produced its physical topic, in place,
// and returns it. A record is renamed once: produce it only after Out.
func (c Config) Out(kr *kgo.Record) *kgo.Record {
	kr.Topic = c.Prefix + kr.Topic
	return kr
}

// OutAll is Out for each of krs.
func (c Config) OutAll(krs []*kgo.Record) []*kgo.Record {
	for _, kr := range krs {
		kr.Topic = c.Prefix + kr.Topic
	}
	return krs
}

// In gives consumed records their logical topics, in place, before
// anything reads them (FromKafka checks a record's partition against the
// topic table by its logical name). The fetches' own topic names, which
// the client commits offsets by, stay physical.
func (c Config) In(krs []*kgo.Record) []*kgo.Record {
	if c.Prefix != "" {
		for _, kr := range krs {
			kr.Topic = strings.TrimPrefix(kr.Topic, c.Prefix)
		}
	}
	return krs
}
