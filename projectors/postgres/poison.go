package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// A record that decodes but that the database refuses for its data (a
// value out of range, a constraint it breaks) would be refused at every
// retry and hold its partition, and every tenant's rows behind it, forever.
// Such a refusal is told from a transient one by its SQLSTATE; the batch is
// then split in halves until the record that causes it is alone, which
// goes to dlq.v1 with the database's reason, and the rest is applied.

// dataError says whether err is the database refusing the data itself,
// which the same batch would meet again at every retry: SQLSTATE classes
// 22 (data exception), 23 (integrity constraint violation) and 54
// (program limit exceeded, e.g. a row too large for an index).
func dataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54":
		return true
	}
	return false
}

// writeBisecting writes batch like write, retrying transient errors; a
// data error splits the batch (see above). It returns the offsets
// committed, merged over known.
func (p *Projector) writeBisecting(ctx context.Context, batch []decoded, known map[topicPartition]int64) (map[topicPartition]int64, error) {
	var committed map[topicPartition]int64
	var refused error
	// Rows are what the database may refuse: a batch of dead letters only
	// (offsets, no rows) that is refused is retried like any failure.
	rows := len(batch) > 1 || batch[0].ok
	err := p.retry(ctx, "apply batch", func() error {
		next, err := p.write(ctx, batch, known)
		if rows && dataError(err) {
			refused = err
			return nil
		}
		committed = next
		return err
	})
	if err != nil {
		return nil, err
	}
	if refused == nil {
		out := maps.Clone(known)
		maps.Copy(out, committed)
		return out, nil
	}
	if len(batch) == 1 {
		return p.poisoned(ctx, &batch[0], refused, known)
	}
	half := len(batch) / 2
	known, err = p.writeBisecting(ctx, batch[:half], known)
	if err != nil {
		return nil, err
	}
	return p.writeBisecting(ctx, batch[half:], known)
}

// applyRefused starts the dlq.error of a record the database refused.
const applyRefused = "apply to postgres: "

// poisoned dead-letters the record d that the database refused alone and
// commits its offset without its rows.
func (p *Projector) poisoned(ctx context.Context, d *decoded, refused error, known map[topicPartition]int64) (map[topicPartition]int64, error) {
	kr := d.kr
	p.log.Warn("dead letter: the read model refuses the record", "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "err", refused)
	dl := kafka.DeadLetter(kr, fmt.Errorf("%s%w", applyRefused, refused), p.cfg.Group)
	if err := p.produceDead(ctx, []*kgo.Record{dl}); err != nil {
		return nil, err
	}
	p.deadLettered(kr.Topic, refused) // telemetry:
	d.ok = false
	return p.writeBisecting(ctx, []decoded{*d}, known)
}

// refusedRecords lists the records that a Postgres projector dead-lettered
// because the database refused them (dlq.v1 read to its last stable
// offset): a rebuild skips them, as the live projector did, instead of
// failing on them.
func refusedRecords(ctx context.Context, kcfg kafka.Config) (map[topicPartition]map[int64]bool, error) {
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", schemas.TopicDLQ, err)
	}
	defer cl.Close()
	// dlq.topic holds the logical name of a dead letter's topic, as the
	// records of the rebuild do.
	dlq := kcfg.Topic(schemas.TopicDLQ)
	lso, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, dlq)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: end offsets: %w", schemas.TopicDLQ, err)
	}
	from, to := map[int32]int64{}, map[int32]int64{}
	lso.Each(func(o kadm.ListedOffset) { from[o.Partition], to[o.Partition] = 0, o.Offset })
	out := map[topicPartition]map[int64]bool{}
	r := kafka.NewPositionReader(cl, dlq, from, to)
	for !r.Done() {
		recs, moved, err := r.Fetch(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", schemas.TopicDLQ, err)
		}
		for _, dl := range recs {
			if !strings.HasPrefix(kafka.DeadLetterHeader(dl, kafka.DLQError), applyRefused) {
				continue
			}
			part, perr := strconv.ParseInt(kafka.DeadLetterHeader(dl, kafka.DLQPartition), 10, 32)
			off, oerr := strconv.ParseInt(kafka.DeadLetterHeader(dl, kafka.DLQOffset), 10, 64)
			if perr != nil || oerr != nil {
				continue
			}
			tp := topicPartition{kafka.DeadLetterHeader(dl, kafka.DLQTopic), int32(part)}
			if out[tp] == nil {
				out[tp] = map[int64]bool{}
			}
			out[tp][off] = true
		}
		if !moved {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return out, nil
}
