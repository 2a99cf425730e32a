package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// write runs one poll's transaction: the batch's rows and the new offsets
// commit together, and records already applied (offset below the stored
// one) are dropped. known is this instance's last view of its offsets.
//
// When known covers every partition of the batch, the whole transaction
// is one round trip: BEGIN, vmplane_advance_offsets (which moves the offset
// rows from what known says to the batch's next offsets, and fails with
// SQLSTATE VP001 unless every one was what known says), the writes and
// COMMIT in one pipeline. Otherwise, or when the check fails
// (another instance committed during a rebalance, a rebuild swapped the
// tables), it takes two: lock and read the offsets, then write what they
// leave. Every poll is one transaction, so its round trips are what a
// record waits on beyond the log (the action latency benchmark).
func (p *Projector) write(ctx context.Context, batch []decoded, known map[topicPartition]int64) (map[topicPartition]int64, error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire: %w", err)
	}
	// A connection left inside a transaction (an error before COMMIT) is
	// rolled back here; if even that fails the pool drops it on Release,
	// since it is not idle.
	defer conn.Release()
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()

	tps := map[topicPartition]bool{}
	for _, d := range batch {
		tps[topicPartition{d.kr.Topic, d.kr.Partition}] = true
	}
	if expected, ok := expectedOffsets(tps, known); ok {
		next, err := p.writeExpecting(ctx, conn.Conn(), batch, expected)
		if err == nil {
			committed = true
			return next, nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != sqlstateOffsetsMoved {
			return nil, err
		}
		p.log.Info("consumer offsets moved under this instance; reading them", "err", err)
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return nil, fmt.Errorf("rollback: %w", err)
		}
	}
	next, err := p.writeLocked(ctx, conn.Conn(), batch, tps)
	if err != nil {
		return nil, err
	}
	committed = true
	return next, nil
}

// sqlstateOffsetsMoved is what vmplane_advance_offsets raises.
const sqlstateOffsetsMoved = "VP001"

// expectedOffsets is known restricted to tps, when it has every one.
func expectedOffsets(tps map[topicPartition]bool, known map[topicPartition]int64) (map[topicPartition]int64, bool) {
	if len(tps) == 0 {
		return nil, false
	}
	out := make(map[topicPartition]int64, len(tps))
	for tp := range tps {
		n, ok := known[tp]
		if !ok {
			return nil, false
		}
		out[tp] = n
	}
	return out, true
}

// writeExpecting is the one-round-trip transaction over offsets expected
// to be stored: the offsets move first, in the statement that checks them,
// so their rows are locked before any write as in writeLocked.
func (p *Projector) writeExpecting(ctx context.Context, conn *pgx.Conn, batch []decoded, expected map[topicPartition]int64) (map[topicPartition]int64, error) {
	ch, next := fold(batch, expected)
	moved := maps.Clone(expected)
	maps.Copy(moved, next) // next's partitions are the batch's, all in expected
	topics, parts, froms := offsetColumns(expected)
	tos := make([]int64, len(topics))
	for i := range topics {
		tos[i] = moved[topicPartition{topics[i], parts[i]}]
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sqlAdvanceOffsets, p.cfg.Group, topics, parts, froms, tos)
	if len(next) > 0 {
		queueChanges(b, ch)
	}
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("write batch: %w", err)
	}
	if err := committedOrError(conn); err != nil {
		return nil, err
	}
	return moved, nil
}

// writeLocked is the two-round-trip transaction: lock and read the
// batch's offset rows, then write what they leave.
func (p *Projector) writeLocked(ctx context.Context, conn *pgx.Conn, batch []decoded, tps map[topicPartition]bool) (map[topicPartition]int64, error) {
	var topics []string
	var parts []int32
	for tp := range tps {
		topics, parts = append(topics, tp.topic), append(parts, tp.partition)
	}
	// FOR UPDATE serializes two instances that briefly both hold a partition
	// during a rebalance; the second then sees the first's offsets.
	lock := &pgx.Batch{}
	lock.Queue("BEGIN")
	lock.Queue(`SELECT topic, "partition", next_offset FROM consumer_offsets
		WHERE "group" = $1 AND (topic, "partition") IN (SELECT * FROM unnest($2::text[], $3::int[]))
		FOR UPDATE`, p.cfg.Group, topics, parts)
	br := conn.SendBatch(ctx, lock)
	// For the early returns, which report the batch's error already; the
	// way through closes it below and checks what that says.
	defer func() { _ = br.Close() }()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("lock consumer offsets: %w", err)
	}
	stored := map[topicPartition]int64{}
	for rows.Next() {
		var tp topicPartition
		var n int64
		if err := rows.Scan(&tp.topic, &tp.partition, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("lock consumer offsets: %w", err)
		}
		stored[tp] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock consumer offsets: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("lock consumer offsets: %w", err)
	}

	ch, next := fold(batch, stored)
	if len(next) == 0 {
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
		return stored, nil
	}
	b := &pgx.Batch{}
	queueChanges(b, ch)
	topics, parts, nexts := offsetColumns(next)
	b.Queue(sqlOffsets, p.cfg.Group, topics, parts, nexts)
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("write batch: %w", err)
	}
	if err := committedOrError(conn); err != nil {
		return nil, err
	}
	return next, nil
}

// sqlAdvanceOffsets moves the offsets of a one-round-trip transaction
// (migrations/0006_advance_offsets.sql).
const sqlAdvanceOffsets = "SELECT vmplane_advance_offsets($1, $2, $3, $4, $5)"

// fold folds the records of batch at or past the stored offsets into their
// changes and returns them with the new offsets; next is empty when no
// record is left.
func fold(batch []decoded, stored map[topicPartition]int64) (*changes, map[topicPartition]int64) {
	ch := newChanges()
	next := map[topicPartition]int64{}
	for _, d := range batch {
		tp := topicPartition{d.kr.Topic, d.kr.Partition}
		if n, ok := stored[tp]; ok && d.kr.Offset < n {
			continue
		}
		if d.ok {
			ch.add(d.rec)
		}
		if d.kr.Offset+1 > next[tp] {
			next[tp] = d.kr.Offset + 1
		}
	}
	return ch, next
}

// queueChanges queues the rows of ch and the notifications of the jobs it
// ended or stepped, which Postgres sends at COMMIT.
func queueChanges(b *pgx.Batch, ch *changes) {
	ch.queue(b)
	queueJobNotifications(b, ch.jobsEnded(), ch.jobsStepped())
}

func offsetColumns(m map[topicPartition]int64) (topics []string, parts []int32, nexts []int64) {
	for tp, n := range m {
		topics, parts, nexts = append(topics, tp.topic), append(parts, tp.partition), append(nexts, n)
	}
	return topics, parts, nexts
}

// committedOrError says whether the pipeline that ended with COMMIT left
// the connection idle: COMMIT of a failed transaction answers ROLLBACK
// without an error; in a pipeline the failure itself is the error of
// SendBatch, and the server skips the rest, so an open transaction here is
// a failure that said nothing.
func committedOrError(conn *pgx.Conn) error {
	if conn.PgConn().TxStatus() != 'I' {
		return errors.New("commit: transaction still open after COMMIT")
	}
	return nil
}
