package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// Replay is the part of Took spent reading and folding the log, Load
	// the part spent writing the folded rows.
	Replay, Load time.Duration
	// OldSchema is where the tables that were replaced now live; nothing
	// drops them, so a rebuild can be undone by renaming them back.
	OldSchema string
}

// Rebuild replays Topics from offset 0 up to their last stable offsets at
// the start into a fresh schema of dsn's database, and then swaps that
// schema in for the live one (the database's current schema) in one
// transaction. vms, jobs, hosts, allocations and alerts are folded in
// memory and bulk-loaded with COPY, job_steps copied while the log is read,
// each table's indexes built after its rows; the other low-volume tables
// go through the live projector's own statements. consumer_offsets of
// DefaultGroup get the offsets the replay stopped at, so a projector
// started afterwards goes on from there.
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
	// Their sessions end before the fresh schema is dropped on failure,
	// which waits for their locks.
	steps, jobs, err := startStreams(ctx, dsn, fresh)
	if err != nil {
		return RebuildStats{}, err
	}
	defer func() { steps.close(); jobs.close() }()
	stats, err := fill(ctx, kcfg, codec, conn, steps, jobs)
	if err != nil {
		return RebuildStats{}, err
	}
	if err := swap(ctx, conn, live, fresh, old); err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: swap: %w", err)
	}
	ok = true
	stats.Took, stats.OldSchema = time.Since(start), old
	return stats, nil
}

// startStreams starts the COPYs of job_steps and jobs into schema, each on
// a connection of its own beside the main one: the steps are loaded while
// the log is still being read (a step's first row is final when it is
// seen), the jobs beside the other tables. Postgres then works while the
// replay decodes, and on more than one core.
func startStreams(ctx context.Context, dsn, schema string) (steps, jobs *stream, err error) {
	steps, err = startStream(ctx, dsn, schema, "job_steps", stepsCopyColumns)
	if err != nil {
		return nil, nil, err
	}
	jobs, err = startStream(ctx, dsn, schema, "jobs", jobsCopyColumns)
	if err != nil {
		steps.close()
		return nil, nil, err
	}
	return steps, jobs, nil
}

// fill replays the log into the tables of conn's search_path, job_steps
// and jobs through their streams, and says what it replayed and wrote.
func fill(ctx context.Context, kcfg kafka.Config, codec *schemas.Codec, conn *pgx.Conn, steps, jobs *stream) (RebuildStats, error) {
	refused, err := refusedRecords(ctx, kcfg)
	if err != nil {
		return RebuildStats{}, fmt.Errorf("rebuild: %w", err)
	}
	replayStart := time.Now()
	ch, ends, records, err := replay(ctx, kcfg, codec, steps, refused)
	if err != nil {
		return RebuildStats{}, err
	}
	// The three loads run side by side, each on its own connection: the
	// jobs (their rows and four indexes, the longest), the other tables,
	// and the end of job_steps with its index.
	loadStart := time.Now()
	if err := sendJobs(ctx, ch, jobs); err != nil {
		return RebuildStats{}, err
	}
	jobs.end()
	rows, err := load(ctx, conn, ch, ends)
	if err != nil {
		return RebuildStats{}, err
	}
	stepRows, err := steps.finish(ctx)
	if err != nil {
		return RebuildStats{}, err
	}
	jobCount, err := jobs.finish(ctx)
	if err != nil {
		return RebuildStats{}, err
	}
	return RebuildStats{Records: records, Rows: rows + stepRows + jobCount,
		Replay: loadStart.Sub(replayStart), Load: time.Since(loadStart)}, nil
}

// swap renames live to old and fresh to live in one transaction, so that a
// reader sees the old tables or the new ones, never neither.
func swap(ctx context.Context, conn *pgx.Conn, live, fresh, old string) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "ALTER SCHEMA "+pgx.Identifier{live}.Sanitize()+" RENAME TO "+pgx.Identifier{old}.Sanitize()); err != nil {
			return fmt.Errorf("rename %s to %s: %w", live, old, err)
		}
		if _, err := tx.Exec(ctx, "ALTER SCHEMA "+pgx.Identifier{fresh}.Sanitize()+" RENAME TO "+pgx.Identifier{live}.Sanitize()); err != nil {
			return fmt.Errorf("rename %s to %s: %w", fresh, live, err)
		}
		return nil
	})
}

// replay reads every partition of Topics from offset 0 to its last stable
// offset at the start and folds the records into one set of changes. It
// returns those end offsets, the positions the rebuilt tables stand at.
// Job steps go to steps as they come, the first row of each step only (the
// live projector's ON CONFLICT DO NOTHING keeps the first one), and are
// not kept in the changes.
func replay(ctx context.Context, kcfg kafka.Config, codec *schemas.Codec, steps *stream, refused map[topicPartition]map[int64]bool) (*changes, map[topicPartition]int64, int64, error) {
	ends, err := stableEnds(ctx, kcfg)
	if err != nil {
		return nil, nil, 0, err
	}
	ch := sizedChanges(ends)
	if len(ends) == 0 {
		return ch, ends, 0, nil
	}
	assign := map[string]map[int32]kgo.Offset{}
	for tp := range ends {
		if assign[tp.topic] == nil {
			assign[tp.topic] = map[int32]kgo.Offset{}
		}
		assign[tp.topic][tp.partition] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumePartitions(kcfg.Offsets(assign)), kgo.FetchMaxBytes(64<<20))...)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("rebuild: kafka client: %w", err)
	}
	defer cl.Close()
	r := &logReader{names: kcfg, codec: codec, ends: ends, seen: map[topicPartition]int64{}, refused: refused,
		first: make(map[stepKey]struct{}, 2*commandsIn(ends)), ch: ch, steps: steps}
	records, err := r.read(ctx, cl)
	if err != nil {
		return nil, nil, 0, err
	}
	return ch, ends, records, nil
}

// stableEnds returns the last stable offset (not the high watermark:
// under read_committed nothing past it can be read yet) of every partition
// of Topics that holds anything.
func stableEnds(ctx context.Context, kcfg kafka.Config) (map[topicPartition]int64, error) {
	admin, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		return nil, fmt.Errorf("rebuild: kafka client: %w", err)
	}
	lso, err := kadm.NewClient(admin).ListCommittedOffsets(ctx, kcfg.Topics(Topics...)...)
	admin.Close()
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("rebuild: list end offsets: %w", err)
	}
	ends := map[topicPartition]int64{}
	lso.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			ends[topicPartition{kcfg.Logical(o.Topic), o.Partition}] = o.Offset
		}
	})
	return ends, nil
}

// sizedChanges returns the changes of the fold with maps sized for the
// commands in the log: a VM and nearly every job start with a command, so
// they seldom grow (growing them was a tenth of the replay's CPU at 5 M
// events, profiled with pprof).
func sizedChanges(ends map[topicPartition]int64) *changes {
	commands := commandsIn(ends)
	return &changes{vms: make(map[string]*vmChange, commands), jobs: make(map[string]*jobChange, commands),
		newJobs: make(map[string]*jobChange, commands)}
}

// commandsIn is the number of commands in the log that ends at ends.
func commandsIn(ends map[topicPartition]int64) int {
	var commands int
	for tp, end := range ends {
		if tp.topic == schemas.TopicVmCommands {
			commands += int(end)
		}
	}
	return commands
}

// stepKey names a job step.
type stepKey struct {
	job string
	seq int32
}

// logReader is a replay's read of the log: it folds the records into ch
// and streams the first row of each job step to steps. ends, seen and
// refused belong to the poller, the rest to the fold.
type logReader struct {
	names   kafka.Config // the records' topics made logical
	codec   *schemas.Codec
	ends    map[topicPartition]int64 // where the read of each partition ends
	seen    map[topicPartition]int64 // the offset after the last one read
	refused map[topicPartition]map[int64]bool
	first   map[stepKey]struct{} // the steps sent already
	ch      *changes
	steps   *stream
}

// read polls cl until every partition is read to its end, folds what it
// read, and returns how many records it read. Polling and decoding run in
// a goroutine of their own, a poll ahead of the fold: decoding is half of
// the replay's CPU, and only the fold must take the records one by one in
// log order.
func (r *logReader) read(ctx context.Context, cl *kgo.Client) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	polls := make(chan []schemas.Record, 2)
	var records int64
	var err error
	go func() {
		defer close(polls)
		records, err = r.poll(ctx, cl, polls)
	}()
	for recs := range polls {
		for _, rec := range recs {
			r.ch.add(rec)
		}
		if serr := r.sendSteps(ctx); serr != nil {
			cancel()
			for range polls { // until the poller has stopped
			}
			return 0, serr
		}
	}
	if err != nil {
		return 0, err
	}
	return records, nil
}

// poll reads every partition to its end and sends each poll's records,
// decoded, to out; it returns how many records it read.
func (r *logReader) poll(ctx context.Context, cl *kgo.Client, out chan<- []schemas.Record) (int64, error) {
	var records int64
	idle := 0
	for !r.done() {
		// A partition whose tail is a transaction marker or an aborted
		// transaction never shows its last offsets: once a poll finds
		// nothing more, everything below the ends has been read.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pctx, 100_000)
		cancel()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err := fetchErrors(fs); err != nil {
			return 0, fmt.Errorf("rebuild: %w", err)
		}
		recs, n := r.decode(ctx, fs)
		records += int64(n)
		if len(recs) > 0 {
			select {
			case out <- recs:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		if fs.NumRecords() > 0 {
			idle = 0
		} else if idle++; idle == 3 {
			break
		}
	}
	return records, nil
}

// done reports whether every partition has been read to its end.
func (r *logReader) done() bool {
	for tp, end := range r.ends {
		if r.seen[tp] < end {
			return false
		}
	}
	return true
}

// fetchErrors joins the errors of a poll, but for its own timeout.
func fetchErrors(fs kgo.Fetches) error {
	var ferr error
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d: %w", topic, p, err))
		}
	})
	return ferr
}

// decode returns the records of fs below their partition's end that the
// fold takes, decoded, and how many it read.
func (r *logReader) decode(ctx context.Context, fs kgo.Fetches) ([]schemas.Record, int) {
	n := 0
	krs := r.names.In(fs.Records())
	recs := make([]schemas.Record, 0, len(krs))
	for _, kr := range krs {
		tp := topicPartition{kr.Topic, kr.Partition}
		if kr.Offset >= r.ends[tp] {
			r.seen[tp] = r.ends[tp] // written after the rebuild started
			continue
		}
		n++
		r.seen[tp] = kr.Offset + 1
		if r.refused[tp][kr.Offset] {
			continue // the database refused it; it is a dead letter
		}
		if kafka.RedriveSkips(kr, DefaultGroup) {
			continue // a redrive for other consumers: the live projector passed it by
		}
		rec, err := kafka.FromKafka(ctx, r.codec, kr)
		if err != nil {
			continue // the live projector dead-lettered it already
		}
		recs = append(recs, rec)
	}
	return recs, n
}

// sendSteps streams the first row of each step the fold has seen since
// the last call, and empties the changes' steps.
func (r *logReader) sendSteps(ctx context.Context) error {
	b := r.steps.buffer()
	for i := range r.ch.steps {
		st := &r.ch.steps[i]
		// One lookup per step: the map grows only for a step not sent.
		n := len(r.first)
		if r.first[stepKey{st.JobID, st.Seq}] = struct{}{}; len(r.first) == n {
			continue
		}
		b = appendStepRow(b, st)
		if len(b) >= streamChunk {
			if err := r.steps.send(ctx, b); err != nil {
				return err
			}
			b = r.steps.buffer()
		}
	}
	r.ch.steps = r.ch.steps[:0]
	return r.steps.send(ctx, b)
}

// appendStepRow appends a row of job_steps in the columns of
// stepsCopyColumns.
func appendStepRow(b copyData, st *stepRow) copyData {
	return b.row(len(stepsCopyColumns)).text(st.JobID).int4(st.Seq).text(st.VmID).text(st.TaskState).text(st.Step).
		text(st.Text).text(st.Obj).timestamptz(st.At).int8(st.version)
}

// load writes the folded changes but jobs and job_steps into the (empty,
// freshly migrated) tables of conn's search_path in one transaction and
// returns the rows written. What it writes is what the live projector's
// statements leave behind applied batch by batch: the newest VM rows, and
// for the low-volume tables their statements' net effect.
func load(ctx context.Context, conn *pgx.Conn, ch *changes, ends map[topicPartition]int64) (int64, error) {
	var rows int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		indexes, err := withoutIndexes(ctx, tx, "vms", "hosts", "allocations", "alerts")
		if err != nil {
			return err
		}
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

		// hosts, allocations and alerts are folded from their statements
		// and copied too: at 5 M events the capacity claims and releases
		// alone were 700,000 statements, most of the rebuild's time. The
		// rest are few and depend on log order, so they run as the live
		// projector runs them, many to a round trip.
		f := foldStatements(ch.stmts)
		for _, t := range []struct {
			name string
			cols []string
			rows [][]any
		}{{"hosts", hostsCopyColumns, f.hostRows()}, {"allocations", allocationsCopyColumns, f.allocationRows()}, {"alerts", alertsCopyColumns, f.alerts}} {
			n, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, pgx.CopyFromRows(t.rows))
			if err != nil {
				return fmt.Errorf("copy %s: %w", t.name, err)
			}
			rows += n
		}
		const perBatch = 5000
		for i := 0; i < len(f.rest); i += perBatch {
			b := &pgx.Batch{}
			for _, st := range f.rest[i:min(i+perBatch, len(f.rest))] {
				b.Queue(st.sql, st.args...)
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return fmt.Errorf("apply statements: %w", err)
			}
		}
		if err := buildIndexes(ctx, tx, indexes); err != nil {
			return err
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
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM offerings) + (SELECT count(*) FROM accounts) +
			(SELECT count(*) FROM api_keys) + (SELECT count(*) FROM host_reservations) + (SELECT count(*) FROM leases) +
			(SELECT count(*) FROM lease_reservations) + (SELECT count(*) FROM lease_events) + (SELECT count(*) FROM settings) +
			(SELECT count(*) FROM snapshots) + (SELECT count(*) FROM templates) + (SELECT count(*) FROM storage_pools) +
			(SELECT count(*) FROM networks) + (SELECT count(*) FROM volumes) + (SELECT count(*) FROM nics) +
			(SELECT count(*) FROM volume_snapshots) + $1::bigint`, rows).Scan(&rows)
	})
	if err != nil {
		return 0, fmt.Errorf("rebuild: load: %w", err)
	}
	return rows, nil
}

// jobRow is a row of jobs, in the columns of jobsCopyColumns.
type jobRow struct {
	ID, VmID, Account, Type, Origin, State, Reason, Detail, TaskState string
	AllowedActions                                                    []string
	CreatedAt, UpdatedAt                                              time.Time
	FinishedAt                                                        *time.Time
	Version                                                           int64
	ErrorCode                                                         string
	Caller                                                            schemas.Caller
}

func (j *jobRow) values() []any {
	return []any{j.ID, j.VmID, j.Account, j.Type, j.Origin, j.State, j.Reason, j.Detail, j.TaskState,
		j.AllowedActions, j.CreatedAt, j.UpdatedAt, j.FinishedAt, j.Version, j.ErrorCode,
		j.Caller.Account, j.Caller.KeyID, j.Caller.RequestID}
}

// jobTable is each job's net state (eachJob).
func jobTable(ch *changes) []jobRow {
	jobs := make([]jobRow, 0, len(ch.jobIDs)+len(ch.newIDs))
	_ = eachJob(ch, func(j *jobRow) error {
		jobs = append(jobs, *j)
		return nil
	})
	return jobs
}

// eachJob calls f with each job's net state, until f fails: created at the
// earliest of its command and its events, its caller the events' or else
// the command's; a job seen only as a command is pending.
func eachJob(ch *changes, f func(*jobRow) error) error {
	for _, id := range ch.jobIDs {
		j := ch.jobs[id]
		created, caller := j.CreatedAt, j.callerOr(schemas.Caller{})
		if c, ok := ch.newJobs[id]; ok {
			created = minTime(created, c.CreatedAt)
			if caller.Account == "" {
				caller = c.callerOr(caller)
			}
		}
		row := jobRow{ID: j.ID, VmID: j.VmID, Account: j.Account, Type: j.Type, Origin: j.Origin, State: j.State,
			Reason: deref(j.Reason), Detail: deref(j.Detail), TaskState: deref(j.TaskState), AllowedActions: nonNil(j.AllowedActions),
			CreatedAt: created, UpdatedAt: j.UpdatedAt, FinishedAt: j.FinishedAt, Version: j.version,
			ErrorCode: deref(j.ErrorCode), Caller: caller}
		if err := f(&row); err != nil {
			return err
		}
	}
	for _, id := range ch.newIDs {
		if _, ok := ch.jobs[id]; !ok {
			row := ch.newJobs[id].pendingRow()
			if err := f(&row); err != nil {
				return err
			}
		}
	}
	return nil
}

// pendingRow is the row of a job seen only as its command.
func (c *jobChange) pendingRow() jobRow {
	return jobRow{ID: c.ID, VmID: c.VmID, Account: c.Account, Type: c.Type, Origin: c.Origin, State: "pending",
		AllowedActions: []string{}, CreatedAt: c.CreatedAt, UpdatedAt: c.CreatedAt, Version: -1, Caller: c.callerOr(schemas.Caller{})}
}

// sendJobs streams the rows of jobTable to s, a chunk at a time.
func sendJobs(ctx context.Context, ch *changes, s *stream) error {
	b := s.buffer()
	err := eachJob(ch, func(j *jobRow) error {
		b = appendJobRow(b, j)
		if len(b) < streamChunk {
			return nil
		}
		err := s.send(ctx, b)
		b = s.buffer()
		return err
	})
	if err != nil {
		return err
	}
	return s.send(ctx, b)
}

// appendJobRow appends a row of jobs in the columns of jobsCopyColumns,
// as values() gives them.
func appendJobRow(b copyData, j *jobRow) copyData {
	return b.row(len(jobsCopyColumns)).text(j.ID).text(j.VmID).text(j.Account).text(j.Type).text(j.Origin).text(j.State).
		text(j.Reason).text(j.Detail).text(j.TaskState).textArray(j.AllowedActions).timestamptz(j.CreatedAt).
		timestamptz(j.UpdatedAt).nullTimestamptz(j.FinishedAt).int8(j.Version).text(j.ErrorCode).
		text(j.Caller.Account).text(j.Caller.KeyID).text(j.Caller.RequestID)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

var (
	jobsCopyColumns = []string{"id", "vm_id", "account", "type", "origin", "state", "reason", "detail", "task_state",
		"allowed_actions", "created_at", "updated_at", "finished_at", "version", "error_code",
		"caller_account", "caller_key_id", "caller_request_id"}
	stepsCopyColumns = []string{"job_id", "seq", "vm_id", "task_state", "step", "text", "obj", "at", "version"}
)

// stream is a COPY into one table of the fresh schema, in a transaction of
// its own connection, fed chunks of rows (copyData) while they are being
// made; the table's indexes are built after its rows.
type stream struct {
	table  string
	conn   *pgx.Conn
	chunks chan copyData
	free   chan copyData // chunks the COPY has sent, for reuse
	cancel context.CancelFunc
	done   chan struct{}
	n      int64
	err    error
	ended  bool
}

// streamChunk is the size past which a chunk of rows is sent.
const streamChunk = 1 << 20

func startStream(ctx context.Context, dsn, schema, table string, cols []string) (*stream, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("rebuild: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "SET search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("rebuild: search_path: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &stream{table: table, conn: conn, chunks: make(chan copyData, 4), free: make(chan copyData, 8), cancel: cancel,
		done: make(chan struct{})}
	sql := copySQL(table, cols)
	go func() {
		defer close(s.done)
		s.err = pgx.BeginFunc(sctx, conn, func(tx pgx.Tx) error {
			indexes, err := withoutIndexes(sctx, tx, table)
			if err != nil {
				return err
			}
			tag, err := tx.Conn().PgConn().CopyFrom(sctx, newCopyReader(sctx, s.chunks, s.free), sql)
			if err != nil {
				return fmt.Errorf("copy %s: %w", table, err)
			}
			s.n = tag.RowsAffected()
			return buildIndexes(sctx, tx, indexes)
		})
	}()
	return s, nil
}

// copySQL is the COPY of a binary stream of cols into table.
func copySQL(table string, cols []string) string {
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = pgx.Identifier{c}.Sanitize()
	}
	return "COPY " + pgx.Identifier{table}.Sanitize() + " (" + strings.Join(quoted, ", ") + ") FROM STDIN (FORMAT binary)"
}

// buffer is an empty chunk to write rows in: one the COPY has sent, or a
// new one.
func (s *stream) buffer() copyData {
	select {
	case b := <-s.free:
		return b
	default:
		return make(copyData, 0, streamChunk+streamChunk/4)
	}
}

// send hands a chunk of rows to the COPY; it fails when the COPY has
// failed.
func (s *stream) send(ctx context.Context, chunk copyData) error {
	if len(chunk) == 0 {
		return nil
	}
	select {
	case s.chunks <- chunk:
		return nil
	case <-s.done:
		return fmt.Errorf("rebuild: %s: %w", s.table, s.err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// end says no more rows come.
func (s *stream) end() {
	if !s.ended {
		s.ended = true
		close(s.chunks)
	}
}

// finish ends the rows, waits for the COPY, its indexes and its commit,
// and returns the rows copied.
func (s *stream) finish(ctx context.Context) (int64, error) {
	s.end()
	select {
	case <-s.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if s.err != nil {
		return 0, fmt.Errorf("rebuild: %s: %w", s.table, s.err)
	}
	return s.n, nil
}

// close abandons the stream if it has not finished and ends its session.
func (s *stream) close() {
	s.cancel()
	<-s.done
	s.conn.Close(context.Background())
}

// withoutIndexes drops the indexes of tables for a bulk load and returns
// the statements that build them again (buildIndexes): one sorted build per
// index instead of a random insert per row and index. (At 1 M events,
// copying jobs into its four indexes took longer than reading and folding
// the whole log.)
func withoutIndexes(ctx context.Context, tx pgx.Tx, tables ...string) ([]string, error) {
	if _, err := tx.Exec(ctx, "SET LOCAL maintenance_work_mem = '256MB'"); err != nil {
		return nil, fmt.Errorf("maintenance_work_mem: %w", err)
	}
	return dropIndexes(ctx, tx, tables)
}

func buildIndexes(ctx context.Context, tx pgx.Tx, defs []string) error {
	for _, def := range defs {
		if _, err := tx.Exec(ctx, def); err != nil {
			return fmt.Errorf("build index: %s: %w", def, err)
		}
	}
	return nil
}

// dropIndexes drops every index of tables (in the current schema),
// primary keys included, and returns the statements that build them again.
func dropIndexes(ctx context.Context, tx pgx.Tx, tables []string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT t.relname, x.relname, coalesce(c.conname, ''), coalesce(pg_get_constraintdef(c.oid), ''),
			pg_get_indexdef(i.indexrelid)
		FROM pg_index i
		JOIN pg_class t ON t.oid = i.indrelid
		JOIN pg_class x ON x.oid = i.indexrelid
		LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
		WHERE t.relnamespace = current_schema()::regnamespace AND t.relname = ANY($1)
		ORDER BY c.conname IS NULL, t.relname, x.relname`, tables)
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	type index struct{ table, name, constraint, constraintDef, indexDef string }
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
		var i index
		err := r.Scan(&i.table, &i.name, &i.constraint, &i.constraintDef, &i.indexDef)
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	var build []string
	for _, i := range all {
		drop, def := "DROP INDEX "+pgx.Identifier{i.name}.Sanitize(), i.indexDef
		if i.constraint != "" {
			t, c := pgx.Identifier{i.table}.Sanitize(), pgx.Identifier{i.constraint}.Sanitize()
			drop, def = "ALTER TABLE "+t+" DROP CONSTRAINT "+c, "ALTER TABLE "+t+" ADD CONSTRAINT "+c+" "+i.constraintDef
		}
		if _, err := tx.Exec(ctx, drop); err != nil {
			return nil, fmt.Errorf("drop index %s: %w", i.name, err)
		}
		build = append(build, def)
	}
	return build, nil
}

// The columns of the folded tables, in the order of the statements'
// arguments: a host's row is sqlHostStatus's arguments and then the usage.
var (
	hostsCopyColumns = []string{"id", "name", "zone_id", "pod_id", "cluster_id", "hypervisor", "status", "resource_state",
		"reservable", "cpu", "memory_mb", "cpu_overcommit", "mem_overcommit", "tags", "last_ping_at", "reason", "updated_at",
		"version", "used_cpu", "used_memory_mb", "usage_version"}
	allocationsCopyColumns = []string{"vm_id", "host_id", "zone_id", "account", "cpu", "memory_mb", "request_id", "at", "version"}
	alertsCopyColumns      = []string{"id", "kind", "vm_id", "host_id", "account", "job_id", "message", "at", "version", "zone_id"}
)

// Positions in a host row.
const (
	hostVersion      = 17
	hostUsedCPU      = 18
	hostUsedMemory   = 19
	hostUsageVersion = 20
)

// folded is what the statements of hosts, allocations and alerts leave
// behind, applied in log order with their own conflict rules and version
// guards; rest are the other statements, in log order.
type folded struct {
	hosts     map[string][]any
	hostIDs   []string
	allocs    map[[2]string][]any
	allocKeys [][2]string
	alerts    [][]any
	alertSeen map[string]bool
	rest      []stmt
}

func foldStatements(stmts []stmt) *folded {
	f := newFolded()
	f.add(stmts)
	return f
}

func newFolded() *folded {
	return &folded{hosts: map[string][]any{}, allocs: map[[2]string][]any{}, alertSeen: map[string]bool{}}
}

// add applies statements after those folded already.
func (f *folded) add(stmts []stmt) {
	alertSeen := f.alertSeen
	for _, st := range stmts {
		a := st.args
		switch st.sql {
		case sqlHostStatus:
			id := a[0].(string)
			h, ok := f.hosts[id]
			if !ok {
				f.hostIDs = append(f.hostIDs, id)
				f.hosts[id] = append(append([]any{}, a...), int32(0), int64(0), int64(-1))
			} else if h[hostVersion].(int64) < a[hostVersion].(int64) {
				copy(h[1:hostUsedCPU], a[1:])
			}
		case sqlHostUsage: // id, zone_id, used_cpu, used_memory_mb, updated_at, usage_version
			id := a[0].(string)
			h, ok := f.hosts[id]
			if !ok {
				f.hostIDs = append(f.hostIDs, id)
				f.hosts[id] = []any{id, "", a[1], "", "", "", "", "", false, int32(0), int64(0), float64(1), float64(1),
					[]string{}, (*time.Time)(nil), "", a[4], int64(-1), a[2], a[3], a[5]}
			} else if h[hostUsageVersion].(int64) < a[5].(int64) {
				h[hostUsedCPU], h[hostUsedMemory], h[hostUsageVersion] = a[2], a[3], a[5]
			}
		case sqlAllocation:
			k := [2]string{a[0].(string), a[1].(string)}
			old, ok := f.allocs[k]
			if !ok {
				f.allocKeys = append(f.allocKeys, k)
			}
			if old == nil || old[8].(int64) < a[8].(int64) {
				f.allocs[k] = a
			}
		case sqlAllocationRelease: // vm_id, host_id, version
			k := [2]string{a[0].(string), a[1].(string)}
			if old := f.allocs[k]; old != nil && old[8].(int64) < a[2].(int64) {
				f.allocs[k] = nil
			}
		case sqlAlert:
			if id := a[0].(string); !alertSeen[id] {
				alertSeen[id] = true
				f.alerts = append(f.alerts, a)
			}
		default:
			f.rest = append(f.rest, st)
		}
	}
}

func (f *folded) hostRows() [][]any {
	out := make([][]any, 0, len(f.hostIDs))
	for _, id := range f.hostIDs {
		out = append(out, f.hosts[id])
	}
	return out
}

func (f *folded) allocationRows() [][]any {
	out := make([][]any, 0, len(f.allocKeys))
	for _, k := range f.allocKeys {
		if a := f.allocs[k]; a != nil {
			out = append(out, a)
		}
	}
	return out
}
