package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// Headers of a redrive. The redriven record carries kafka.DLQRedrivenFrom
// and kafka.DLQRedriveFor; a marker record on dlq.v1 (no value) carries
// redriveOf and redriveTo, written in the same Kafka transaction as the
// redriven record, so a redrive either happened and is known, or did not
// happen.
//
// A record refused by several consumers of its topic is a dead letter of
// each; they share its origin (topic, partition, offset). A redrive of any
// of them is the redrive of the origin: the record goes back once, for
// the consumers that refused it (kafka.DLQRedriveFor; the others applied
// it and pass it by), and every one of them gets a marker.
const (
	redriveOf = "dlq.redrive-of" // on the marker: "P@O" of the entry redriven
	redriveTo = "dlq.redrive-to" // on the marker: the topic it went back to
	redriveAt = "dlq.redrive-at"
)

const dlqUsage = `usage:
  vmplane dlq list    [flags]                 every dead letter: where it came from, who refused it, why
  vmplane dlq show    [flags] PARTITION@OFFSET one dead letter, decoded where possible
  vmplane dlq redrive [flags] PARTITION@OFFSET put it back on its original topic (once), after a fix
`

func runDLQ(ctx context.Context, args []string, log *slog.Logger) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, dlqUsage)
		return errors.New("missing subcommand")
	}
	if wantsHelp(args[:1]) || args[0] == "help" {
		fmt.Fprint(os.Stdout, dlqUsage)
		return nil
	}
	f := newFlags("dlq " + args[0])
	k := f.kafka()
	if err := f.Parse(args[1:]); err != nil {
		return err
	}
	cfg, err := k.config()
	if err != nil {
		return err
	}
	switch args[0] {
	case "list":
		entries, err := readDLQ(ctx, cfg)
		if err != nil {
			return err
		}
		return listDLQ(os.Stdout, entries)
	case "show", "redrive":
		if f.NArg() != 1 {
			return fmt.Errorf("dlq %s: want one PARTITION@OFFSET (from dlq list)", args[0])
		}
		at, err := parseAt(f.Arg(0))
		if err != nil {
			return err
		}
		entries, err := readDLQ(ctx, cfg)
		if err != nil {
			return err
		}
		e, ok := findEntry(entries, at)
		if !ok {
			return fmt.Errorf("no dead letter at %s", at)
		}
		if args[0] == "show" {
			return showDLQ(ctx, os.Stdout, cfg, e)
		}
		to, err := redriveDLQ(ctx, cfg, e, entries)
		if err != nil {
			return err
		}
		fmt.Printf("redriven %s to %s\n", at, to)
		return nil
	}
	fmt.Fprint(os.Stderr, dlqUsage)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

// dlqAt locates a dead letter on dlq.v1.
type dlqAt struct {
	Partition int32
	Offset    int64
}

func (a dlqAt) String() string { return fmt.Sprintf("%d@%d", a.Partition, a.Offset) }

func parseAt(s string) (dlqAt, error) {
	p, o, ok := strings.Cut(s, "@")
	part, err1 := strconv.ParseInt(p, 10, 32)
	off, err2 := strconv.ParseInt(o, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return dlqAt{}, fmt.Errorf("%q is not PARTITION@OFFSET", s)
	}
	return dlqAt{int32(part), off}, nil
}

// dlqEntry is one dead letter and what became of it.
type dlqEntry struct {
	At     dlqAt
	Record *kgo.Record
	// Redriven is the marker of its redrive, nil if never redriven.
	Redriven *kgo.Record
}

// header reads one of the entry's dlq.* headers as the dead-lettering
// wrote it (kafka.DeadLetterHeader), never one its original carried.
func (e dlqEntry) header(k string) string { return kafka.DeadLetterHeader(e.Record, k) }

// readDLQ reads dlq.v1 from its start to its end as of now (committed
// records only) and pairs each dead letter with its redrive marker.
func readDLQ(ctx context.Context, cfg kafka.Config) ([]dlqEntry, error) {
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		return nil, fmt.Errorf("dlq client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	dlq := cfg.Topic(schemas.TopicDLQ)
	ends, err := adm.ListEndOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("dlq end offsets: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("dlq start offsets: %w", err)
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(o.Topic, o.Partition)
		if o.Err == nil && o.Offset > s.Offset {
			want[o.Partition] = o.Offset
			offsets[o.Partition] = kgo.NewOffset().At(s.Offset)
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	rd, err := kgo.NewClient(cfg.Opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{dlq: offsets}))...)
	if err != nil {
		return nil, fmt.Errorf("dlq reader: %w", err)
	}
	defer rd.Close()
	var entries []dlqEntry
	markers := map[dlqAt]*kgo.Record{}
	deadline := time.Now().Add(30 * time.Second)
	for len(want) > 0 {
		// The end can be a transaction marker, which is never delivered:
		// a poll that stays empty for a moment means everything is read.
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := rd.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		n := 0
		for _, kr := range cfg.In(fs.Records()) {
			n++
			if end, ok := want[kr.Partition]; ok && kr.Offset+1 >= end {
				delete(want, kr.Partition)
			}
			// A marker is a redrive's own record: it names no origin. A
			// dead letter's original may carry any header it likes.
			if of := kafka.Header(kr, redriveOf); of != "" && kafka.Header(kr, kafka.DLQTopic) == "" {
				if at, err := parseAt(of); err == nil {
					markers[at] = kr
				}
				continue
			}
			entries = append(entries, dlqEntry{At: dlqAt{kr.Partition, kr.Offset}, Record: kr})
		}
		if n == 0 || time.Now().After(deadline) {
			break
		}
	}
	for i := range entries {
		entries[i].Redriven = markers[entries[i].At]
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].At, entries[j].At
		return a.Partition < b.Partition || a.Partition == b.Partition && a.Offset < b.Offset
	})
	return entries, nil
}

func findEntry(entries []dlqEntry, at dlqAt) (dlqEntry, bool) {
	for _, e := range entries {
		if e.At == at {
			return e, true
		}
	}
	return dlqEntry{}, false
}

func listDLQ(w io.Writer, entries []dlqEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tTOPIC\tPARTITION\tOFFSET\tKEY\tTYPE\tCONSUMER\tWHEN\tREDRIVEN\tERROR")
	for _, e := range entries {
		red := "-"
		if e.Redriven != nil {
			red = kafka.Header(e.Redriven, redriveAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.At, e.header(kafka.DLQTopic), e.header(kafka.DLQPartition),
			e.header(kafka.DLQOffset), e.Record.Key, orDash(kafka.Header(e.Record, "type")), e.header(kafka.DLQConsumer), e.header(kafka.DLQAt), red,
			oneLine(e.header(kafka.DLQError)))
	}
	return tw.Flush()
}

func showDLQ(ctx context.Context, w io.Writer, cfg kafka.Config, e dlqEntry) error {
	fmt.Fprintf(w, "dead letter %s (dlq.v1)\norigin: %s/%s@%s, refused by %s\nkey: %s\nheaders:\n", e.At, e.header(kafka.DLQTopic),
		e.header(kafka.DLQPartition), e.header(kafka.DLQOffset), e.header(kafka.DLQConsumer), e.Record.Key)
	for _, h := range e.Record.Headers {
		fmt.Fprintf(w, "  %s: %s\n", h.Key, h.Value)
	}
	if e.Redriven != nil {
		fmt.Fprintf(w, "redriven: %s to %s\n", kafka.Header(e.Redriven, redriveAt), kafka.Header(e.Redriven, redriveTo))
	}
	fmt.Fprintf(w, "value: %d bytes\n", len(e.Record.Value))
	codec, err := cfg.Codec()
	if err != nil {
		return err
	}
	// Shown as it is: a dead letter may break the strings' rules, which
	// is often why it is one; the decoded form still shows the value.
	v, err := codec.DecodeAny(ctx, e.Record.Value)
	if err != nil {
		fmt.Fprintf(w, "decoded: no (%v)\nraw: %x\n", err, e.Record.Value)
		return nil
	}
	fmt.Fprintf(w, "decoded: %s\n%+v\n", schemas.TypeName(v), v)
	if _, err := codec.Decode(ctx, e.Record.Value); err != nil {
		fmt.Fprintf(w, "contract: broken (%v)\n", err)
	}
	return nil
}

// origin is where a dead letter's original was read: topic/partition@offset.
func (e dlqEntry) origin() string {
	return fmt.Sprintf("%s/%s@%s", e.header(kafka.DLQTopic), e.header(kafka.DLQPartition), e.header(kafka.DLQOffset))
}

// siblings returns the dead letters of e's origin among entries, e among them.
func siblings(e dlqEntry, entries []dlqEntry) []dlqEntry {
	out := []dlqEntry{e}
	for _, o := range entries {
		if o.At != e.At && o.origin() == e.origin() {
			out = append(out, o)
		}
	}
	return out
}

// redriveDLQ puts e's original key, value and headers back on its topic,
// for the consumers that dead-lettered it (e's siblings among entries),
// with a marker on dlq.v1 for each of those dead letters, in one
// transaction; an origin already redriven, or a record its topic does not
// carry, is refused. It returns where the record went. dlq.topic holds the
// logical name of the topic (whatever the prefix of the install that
// dead-lettered it): the record goes back to that topic under cfg's prefix.
func redriveDLQ(ctx context.Context, cfg kafka.Config, e dlqEntry, entries []dlqEntry) (string, error) {
	if e.Redriven != nil {
		return "", fmt.Errorf("%s (%s) was redriven at %s to %s; refusing a second redrive", e.At, e.origin(),
			kafka.Header(e.Redriven, redriveAt), kafka.Header(e.Redriven, redriveTo))
	}
	// A dead letter of the origin written after an earlier redrive (a
	// consumer that refused it later) is redriven for its own consumer
	// alone: the others have theirs.
	var sibs []dlqEntry
	var refused []string
	for _, s := range siblings(e, entries) {
		if s.Redriven != nil {
			continue
		}
		sibs = append(sibs, s)
		if c := s.header(kafka.DLQConsumer); c != "" && !slices.Contains(refused, c) {
			refused = append(refused, c)
		}
	}
	if len(refused) == 0 {
		return "", fmt.Errorf("%s (%s) names no consumer that refused it: a redrive would be for nobody", e.At, e.origin())
	}
	sort.Strings(refused)
	topic := e.header(kafka.DLQTopic)
	if topic == "" {
		return "", fmt.Errorf("%s names no original topic", e.At)
	}
	if err := checkRedrive(ctx, cfg, e, topic); err != nil {
		return "", err
	}
	rec := &kgo.Record{Topic: topic, Key: e.Record.Key, Value: e.Record.Value}
	for _, h := range e.Record.Headers {
		if !strings.HasPrefix(h.Key, "dlq.") {
			rec.Headers = append(rec.Headers, h)
		}
	}
	rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: kafka.DLQRedrivenFrom, Value: []byte(e.At.String())},
		kgo.RecordHeader{Key: kafka.DLQRedriveFor, Value: []byte(strings.Join(refused, ","))})
	now := time.Now().UTC().Format(time.RFC3339Nano)
	recs := []*kgo.Record{rec}
	for _, s := range sibs {
		recs = append(recs, &kgo.Record{Topic: schemas.TopicDLQ, Key: s.Record.Key, Partition: s.At.Partition, Headers: []kgo.RecordHeader{
			{Key: redriveOf, Value: []byte(s.At.String())},
			{Key: redriveTo, Value: []byte(topic)},
			{Key: redriveAt, Value: []byte(now)},
		}})
	}
	// The transactional id serializes redrives: two operators at once fence
	// each other instead of both redriving.
	cl, err := kgo.NewClient(cfg.Opts(kgo.TransactionalID(cfg.Group("vmplane-dlq-redrive")),
		kgo.RecordPartitioner(kafka.Partitioner(cfg.Topic(schemas.TopicDLQ))))...)
	if err != nil {
		return "", fmt.Errorf("dlq redrive client: %w", err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return "", fmt.Errorf("dlq redrive: begin: %w", err)
	}
	res := cl.ProduceSync(ctx, cfg.OutAll(recs)...)
	commit := kgo.TryCommit
	if res.FirstErr() != nil {
		commit = kgo.TryAbort
	}
	if err := cl.EndTransaction(ctx, commit); err != nil {
		return "", fmt.Errorf("dlq redrive: end transaction: %w", err)
	}
	if err := res.FirstErr(); err != nil {
		return "", fmt.Errorf("dlq redrive: %w", err)
	}
	return fmt.Sprintf("%s/%d@%d", rec.Topic, rec.Partition, rec.Offset), nil
}

// checkRedrive refuses to put e on topic unless the value decodes (with
// cfg's codec: run redrive with the schema registry the record needs) to
// a type that topic carries and its `type` header, if any, agrees. A dead
// letter names its origin, but its bytes came from whoever wrote the
// original: a Terminate an agent wrote to vm.power.v1 must never reach
// vm.commands.v1.
func checkRedrive(ctx context.Context, cfg kafka.Config, e dlqEntry, topic string) error {
	spec, ok := schemas.TopicByName(topic)
	if !ok || topic == schemas.TopicDLQ {
		return fmt.Errorf("%s names %q as its topic, which is not a vmplane input; refusing the redrive", e.At, topic)
	}
	codec, err := cfg.Codec()
	if err != nil {
		return err
	}
	v, err := codec.Decode(ctx, e.Record.Value)
	if err != nil {
		return fmt.Errorf("%s does not decode here (%v); refusing the redrive: run it with what reads the record (--schema-registry, a newer vmplane)", e.At, err)
	}
	name := schemas.TypeName(v)
	if h := kafka.Header(e.Record, "type"); h != "" && h != name {
		return fmt.Errorf("%s has the type header %q but its value is a %s; refusing the redrive", e.At, h, name)
	}
	if !spec.Carries(name) {
		where := "no topic carries it"
		if ts := schemas.TopicsCarrying(name); len(ts) > 0 {
			where = name + " belongs on " + strings.Join(ts, ", ")
		}
		return fmt.Errorf("%s is a %s, which %s does not carry (%s); refusing the redrive", e.At, name, topic, where)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
