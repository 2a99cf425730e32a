package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

const topicsUsage = `usage:
  vmplane topics create [flags]   create the missing topics of the topic table (idempotent), then check them
  vmplane topics check  [flags]   list every way the cluster's topics differ from the topic table; exit 1 if any

The roles never create topics: run "topics create" once with an admin
principal before the first start, and "topics check" whenever in doubt.
`

func runTopics(ctx context.Context, args []string, _ *slog.Logger) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "check") {
		fmt.Fprint(os.Stderr, topicsUsage)
		return errors.New("want create or check")
	}
	f := newFlags("topics " + args[0])
	k := f.kafka()
	f.Usage = func() {
		fmt.Fprint(f.Output(), topicsUsage+"\nflags:\n")
		f.PrintDefaults()
	}
	rf := f.num("replication-factor", "VMPLANE_KAFKA_REPLICATION", 0,
		"replication factor of created topics, and the least check accepts (0: the broker's default.replication.factor, not checked); 3 on a production cluster")
	isr := f.num("min-insync-replicas", "VMPLANE_KAFKA_MIN_INSYNC", 0,
		"min.insync.replicas of created topics, and the least check accepts (0: the broker's, not checked); 2 with 3 replicas")
	if err := f.Parse(args[1:]); err != nil {
		return err
	}
	if *rf < 0 || *rf > 32767 || *isr < 0 {
		return fmt.Errorf("--replication-factor %d, --min-insync-replicas %d: want 0 or more", *rf, *isr)
	}
	cfg, err := k.config()
	if err != nil {
		return err
	}
	o := kafka.TopicOptions{Replication: int16(*rf), MinInsync: *isr}
	return topics(ctx, os.Stdout, cfg, args[0] == "create", o)
}

// topics creates the table's missing topics when create is set, then
// checks them all and lists the differences on w.
func topics(ctx context.Context, w io.Writer, cfg kafka.Config, create bool, o kafka.TopicOptions) error {
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var createErr error
	if create {
		// A topic that exists with another partition count is reported by
		// the check below, with every other difference.
		createErr = cfg.EnsureTopics(ctx, cl, schemas.Topics, o)
	}
	diffs, err := cfg.CheckTopics(ctx, cl, schemas.Topics, o)
	if err != nil {
		return errors.Join(createErr, err)
	}
	for _, d := range diffs {
		fmt.Fprintln(w, d)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%d differences from the topic table (schemas/topics.go; docs/operations.md, \"Topics\")", len(diffs))
	}
	if createErr != nil {
		return createErr
	}
	fmt.Fprintf(w, "%d topics as the topic table says\n", len(schemas.Topics))
	return nil
}
