package kafka

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Headers of a record put back by `vmplane dlq redrive`. A record that
// several consumers of its topic read is dead-lettered by each that
// refuses it, and applied by the others; put back on the topic, it would
// reach them all again. So the redrive names the consumers that refused it
// (DLQRedriveFor, comma separated), and every other consumer of the topic
// passes it by (RedriveSkips): each consumer applies the record once,
// whichever of its deliveries it takes.
const (
	DLQRedrivenFrom = "dlq.redriven-from" // "P@O" of the dead letter on dlq.v1
	DLQRedriveFor   = "dlq.redrive-for"   // the consumer groups that refused the original
)

// RedriveSkips reports whether the consumer group must pass kr by: kr is a
// redrive meant for other consumers. A consumer without a group (the
// gateway's event streams) never refused anything, so it passes every
// redrive by. A record that names no consumers is no redrive of ours.
func RedriveSkips(kr *kgo.Record, group string) bool {
	if Header(kr, DLQRedrivenFrom) == "" {
		return false
	}
	var forWhom string
	found := false
	for _, h := range kr.Headers {
		if h.Key == DLQRedriveFor {
			forWhom, found = string(h.Value), true
		}
	}
	if !found {
		return false
	}
	return group == "" || !slices.Contains(strings.Split(forWhom, ","), group)
}
