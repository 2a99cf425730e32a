package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ListOffsets calls list (a kadm.Client listing: ListEndOffsets,
// ListCommittedOffsets, ...) for topics until every topic answers, or ctx
// ends. A new client's first listing can fail for a whole topic before its
// metadata knows it, which would read as "empty".
func ListOffsets(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topics ...string) (kadm.ListedOffsets, error) {
	for {
		listed, err := list(ctx, topics...)
		if err == nil {
			err = listed.Error()
		}
		if err == nil {
			return listed, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list offsets of %v: %w", topics, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
