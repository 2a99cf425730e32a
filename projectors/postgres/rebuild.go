package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// RebuildStats says what a rebuild did.
type RebuildStats struct {
	// Records is how many records were replayed; Rows how many rows the
	// rebuilt tables hold (consumer_offsets aside).
	Records, Rows int64
	Took          time.Duration
	// OldSchema is where the tables that were replaced now live; nothing
	// drops them, so a rebuild can be undone by renaming them back.
	OldSchema string
}

// Rebuild replays Topics from offset 0 up to their last stable offsets at
// the start into a fresh schema of dsn's database, and then swaps that
// schema in for the live one (the database's current schema) in one
// transaction. The hot tables (vms, jobs, job_steps) are folded in memory
// and bulk-loaded with COPY; the low-volume ones go through the live
// projector's own statements. consumer_offsets of DefaultGroup get the
// offsets the replay stopped at, so a projector started afterwards goes on
// from there.
//
// Stop the Postgres projectors before and start them after: they read their
// positions only when they are given their partitions, and a running one
// would write into the replaced schema. Readers (the gateway) should be
// restarted too, since pooled sessions may hold plans of the old tables.
func Rebuild(ctx context.Context, kcfg kafka.Config, dsn string) (RebuildStats, error) {
	start := time.Now()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var live string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&live); err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: current schema: %w", err)
	}
	stamp := start.UTC().Format("20060102_150405")
	fresh, old := "vmplane_rebuild_"+stamp, live+"_before_"+stamp

	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{fresh}.Sanitize()); err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: create schema %s: %w", fresh, err)
	}
	ok := false
	defer func() {
		if !ok {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+pgx.Identifier{fresh}.Sanitize()+" CASCADE")
		}
	}()
	if _, err := conn.Exec(ctx, "SET search_path TO "+pgx.Identifier{fresh}.Sanitize()); err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: search_path: %w", err)
	}
	if err := migrateConn(ctx, conn); err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: %w", err)
	}

	codec, err := kcfg.Codec()
	if err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: %w", err)
	}
	ch, ends, records, err := replay(ctx, kcfg, codec)
	if err != nil {
		return RebuildStats{}, err
	}
	rows, err := load(ctx, conn, ch, ends)
	if err != nil {
		return RebuildStats{}, err
	}

	// The swap: one transaction, so a reader sees the old tables or the new
	// ones, never neither.
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "ALTER SCHEMA "+pgx.Identifier{live}.Sanitize()+" RENAME TO "+pgx.Identifier{old}.Sanitize()); err != nil {
			return fmt.Errorf("rename %s to %s: %w", live, old, err)
		}
		if _, err := tx.Exec(ctx, "ALTER SCHEMA "+pgx.Identifier{fresh}.Sanitize()+" RENAME TO "+pgx.Identifier{live}.Sanitize()); err != nil {
			return fmt.Errorf("rename %s to %s: %w", fresh, live, err)
		}
		return nil
	})
	if err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: swap: %w", err)
	}
	ok = true
	return RebuildStats{Records: records, Rows: rows, Took: time.Since(start), OldSchema: old}, nil
}

// replay reads every partition of Topics from offset 0 to its last stable
// offset at the start and folds the records into one set of changes. It
// returns those end offsets, the positions the rebuilt tables stand at.
func replay(ctx context.Context, kcfg kafka.Config, codec *schemas.Codec) (*changes, map[topicPartition]int64, int64, error) {
	admin, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("rebuild: kafka client: %w", err)
	}
	// The last stable offset (not the high watermark): under read_committed
	// nothing past it can be read yet.
	lso, err := kadm.NewClient(admin).ListCommittedOffsets(ctx, Topics...)
	admin.Close()
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("rebuild: list end offsets: %w", err)
	}
	ends := map[topicPartition]int64{}
	assign := map[string]map[int32]kgo.Offset{}
	lso.Each(func(o kadm.ListedOffset) {
		if o.Offset <= 0 {
			return
		}
		ends[topicPartition{o.Topic, o.Partition}] = o.Offset
		if assign[o.Topic] == nil {
			assign[o.Topic] = map[int32]kgo.Offset{}
		}
		assign[o.Topic][o.Partition] = kgo.NewOffset().At(0)
	})
	ch := newChanges()
	if len(ends) == 0 {
		return ch, ends, 0, nil
	}
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumePartitions(assign), kgo.FetchMaxBytes(64<<20))...)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("rebuild: kafka client: %w", err)
	}
	defer cl.Close()

	seen := map[topicPartition]int64{}
	done := func() bool {
		for tp, end := range ends {
			if seen[tp] < end {
				return false
			}
		}
		return true
	}
	var records int64
	idle := 0
	for !done() {
		// A partition whose tail is a transaction marker or an aborted
		// transaction never shows its last offsets: once a poll finds
		// nothing more, everything below the ends has been read.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pctx, 100_000)
		cancel()
		if ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d: %w", topic, p, err))
			}
		})
		if ferr != nil {
			return nil, nil, 0, fmt.Errorf("rebuild: %w", ferr)
		}
		n := 0
		fs.EachRecord(func(kr *kgo.Record) {
			tp := topicPartition{kr.Topic, kr.Partition}
			if kr.Offset >= ends[tp] {
				seen[tp] = ends[tp] // written after the rebuild started
				return
			}
			n++
			seen[tp] = kr.Offset + 1
			rec, err := kafka.FromKafka(ctx, codec, kr)
			if err != nil {
				return // the live projector dead-lettered it already
			}
			ch.add(rec)
		})
		records += int64(n)
		if fs.NumRecords() > 0 {
			idle = 0
		} else if idle++; idle == 3 {
			break
		}
	}
	return ch, ends, records, nil
}

// load writes the folded changes into the (empty, freshly migrated) tables
// of conn's search_path in one transaction and returns the rows written.
// What it writes is what the live projector's statements leave behind
// applied batch by batch: the newest VM rows, each job's net state (created
// at the earliest of its command and its events), the first row of each
// step.
func load(ctx context.Context, conn *pgx.Conn, ch *changes, ends map[topicPartition]int64) (int64, error) {
	var rows int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var vms [][]any
		for _, id := range ch.vmOrder {
			v := ch.vms[id]
			if v.op != vmUpsert {
				continue // power updates of a VM without a row, and deletes, leave no row
			}
			r := v.row
			vms = append(vms, []any{r.ID, r.Name, r.Account, r.ZoneID, r.OfferingID, r.Offering, r.CPU, r.MemoryMB, r.HA,
				r.VmState, r.TaskState, r.PowerState, r.PowerHost, r.PowerUpdateTime, r.PowerUpdateCount, r.LegacyState,
				r.HostID, r.Epoch, r.JobID, r.PendingJobs, nonNil(r.AllowedActions), r.Reason, r.CreatedAt, r.UpdatedAt, v.version})
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"vms"}, []string{"id", "name", "account", "zone_id", "offering_id", "offering",
			"cpu", "memory_mb", "ha", "vm_state", "task_state", "power_state", "power_host", "power_state_update_time",
			"power_state_update_count", "legacy_state", "host_id", "epoch", "job_id", "pending_jobs", "allowed_actions",
			"reason", "created_at", "updated_at", "version"}, pgx.CopyFromRows(vms))
		if err != nil {
			return fmt.Errorf("copy vms: %w", err)
		}
		rows += n

		var jobs [][]any
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		for _, id := range ch.jobIDs {
			j := ch.jobs[id]
			created := j.CreatedAt
			if c, ok := ch.newJobs[id]; ok && c.CreatedAt.Before(created) {
				created = c.CreatedAt
			}
			actions := j.AllowedActions
			if actions == nil {
				actions = []string{}
			}
			jobs = append(jobs, []any{j.ID, j.VmID, j.Account, j.Type, j.Origin, j.State, str(j.Reason), str(j.Detail),
				str(j.TaskState), actions, created, j.UpdatedAt, j.FinishedAt, j.version})
		}
		for _, id := range ch.newIDs {
			if _, ok := ch.jobs[id]; ok {
				continue
			}
			c := ch.newJobs[id]
			jobs = append(jobs, []any{c.ID, c.VmID, c.Account, c.Type, c.Origin, "pending", "", "", "", []string{},
				c.CreatedAt, c.CreatedAt, (*time.Time)(nil), int64(-1)})
		}
		n, err = tx.CopyFrom(ctx, pgx.Identifier{"jobs"}, []string{"id", "vm_id", "account", "type", "origin", "state", "reason",
			"detail", "task_state", "allowed_actions", "created_at", "updated_at", "finished_at", "version"}, pgx.CopyFromRows(jobs))
		if err != nil {
			return fmt.Errorf("copy jobs: %w", err)
		}
		rows += n

		type stepKey struct {
			job string
			seq int32
		}
		first := map[stepKey]bool{}
		var steps [][]any
		for _, s := range ch.steps {
			k := stepKey{s.JobID, s.Seq}
			if first[k] {
				continue // ON CONFLICT DO NOTHING: the first one stays
			}
			first[k] = true
			steps = append(steps, []any{s.JobID, s.Seq, s.VmID, s.TaskState, s.Step, s.Text, s.Obj, s.At, s.version})
		}
		n, err = tx.CopyFrom(ctx, pgx.Identifier{"job_steps"}, []string{"job_id", "seq", "vm_id", "task_state", "step", "text",
			"obj", "at", "version"}, pgx.CopyFromRows(steps))
		if err != nil {
			return fmt.Errorf("copy job_steps: %w", err)
		}
		rows += n

		// The other tables are small (hosts, allocations, offerings, keys,
		// alerts) and their statements depend on log order, so they run as
		// the live projector runs them, many to a round trip.
		const perBatch = 5000
		for i := 0; i < len(ch.stmts); i += perBatch {
			b := &pgx.Batch{}
			for _, st := range ch.stmts[i:min(i+perBatch, len(ch.stmts))] {
				b.Queue(st.sql, st.args...)
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return fmt.Errorf("apply statements: %w", err)
			}
		}
		var oTopics []string
		var oParts []int32
		var oNext []int64
		for tp, n := range ends {
			oTopics, oParts, oNext = append(oTopics, tp.topic), append(oParts, tp.partition), append(oNext, n)
		}
		if _, err := tx.Exec(ctx, sqlOffsets, DefaultGroup, oTopics, oParts, oNext); err != nil {
			return fmt.Errorf("store offsets: %w", err)
		}
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM hosts) + (SELECT count(*) FROM allocations) +
			(SELECT count(*) FROM offerings) + (SELECT count(*) FROM accounts) + (SELECT count(*) FROM api_keys) +
			(SELECT count(*) FROM alerts) + (SELECT count(*) FROM host_reservations) + $1::bigint`, rows).Scan(&rows)
	})
	if err != nil {
		return 0, fmt.Errorf("rebuild: load: %w", err)
	}
	return rows, nil
}
