package storm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/pgserver"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// env is one repetition's world: a fresh kfake broker and a fresh database.
type env struct {
	broker *kafka.Broker
	kcfg   kafka.Config
	cl     *kgo.Client
	adm    *kadm.Client
	base   string // the server's DSN
	dbName string
	dsn    string
	log    *slog.Logger
}

func newEnv(ctx context.Context, pgBase string, log *slog.Logger) (*env, error) {
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		return nil, err
	}
	e := &env{broker: b, kcfg: kafka.Config{Brokers: b.Addrs()}, base: pgBase, log: log}
	e.cl, err = kgo.NewClient(e.kcfg.Opts(kgo.ProducerBatchMaxBytes(batchMaxBytes), kgo.MaxBufferedRecords(100_000))...)
	if err != nil {
		e.close()
		return nil, err
	}
	e.adm = kadm.NewClient(e.cl)
	if err := e.kcfg.EnsureTopics(ctx, e.cl, append(append([]schemas.TopicSpec{}, schemas.Topics...), benchTopics...), kafka.TopicOptions{Replication: 1}); err != nil {
		e.close()
		return nil, err
	}
	e.dsn, e.dbName, err = pgserver.FreshDatabase(ctx, pgBase, "bench_")
	if err != nil {
		e.close()
		return nil, err
	}
	// The read model's tables exist before any role reads them, as the
	// dev stack and `vmplane gateway` make them: a gateway started beside
	// the projector warned, from its sweepers and inventory, until the
	// projector had migrated.
	if err := postgres.Migrate(ctx, e.dsn); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.dsn != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := pgserver.DropDatabase(ctx, e.base, e.dbName); err != nil {
			e.log.Warn("drop bench database", "db", e.dbName, "err", err)
		}
		cancel()
	}
	if e.cl != nil {
		e.cl.Close()
	}
	e.broker.Close()
}

// committed sums a group's committed offsets on topic.
func (e *env) committed(ctx context.Context, group, topic string) (int64, error) {
	o, err := e.adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	var n int64
	o.Each(func(r kadm.OffsetResponse) {
		if r.Topic == topic && r.Err == nil && r.At > 0 {
			n += r.At
		}
	})
	return n, nil
}

// waitCommitted waits until group has committed want records of topic,
// polling every 5 ms, and returns when it saw it.
func (e *env) waitCommitted(ctx context.Context, group, topic string, want int64, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		n, err := e.committed(ctx, group, topic)
		if err == nil && n >= want {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s committed %d of %d records of %s in %s (err %v)", group, n, want, topic, limit, err)
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitProjected waits until the Postgres projector has stored, for every
// partition of topic, a next offset at the partition's end. Every writer of
// the topic is transactional, so a partition ends with a commit marker that
// the projector never sees: its next offset then stops one short.
func (e *env) waitProjected(ctx context.Context, topic string, limit time.Duration) (time.Time, error) {
	ends, err := e.endOffsets(ctx, topic)
	if err != nil {
		return time.Time{}, err
	}
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(limit)
	for {
		next := map[int32]int64{}
		rows, err := conn.Query(ctx, `SELECT "partition", next_offset FROM consumer_offsets WHERE "group" = $1 AND topic = $2`, postgres.DefaultGroup, topic)
		if err == nil {
			for rows.Next() {
				var p int32
				var n int64
				if err = rows.Scan(&p, &n); err != nil {
					break
				}
				next[p] = n
			}
			rows.Close()
		}
		if err == nil {
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if o.Offset > 0 && next[o.Partition] < o.Offset-1 {
					done = false
				}
			})
			if done {
				return time.Now(), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("projector did not reach the end of %s in %s (err %v)", topic, limit, err)
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// endOffsets lists the end offset of every partition of topic. A fresh
// admin client's first listing can fail for the whole topic (partition -1,
// UNKNOWN_TOPIC_OR_PARTITION, offset 0) before its metadata knows it; read
// as "every partition is empty", that made waitProjected return at once,
// before the seeding projector had written anything, and the storm's
// projector then counted the seeding's inserts as its own writes.
func (e *env) endOffsets(ctx context.Context, topic string) (kadm.ListedOffsets, error) {
	want := int(schemas.Partitions[schemas.KeyVM])
	deadline := time.Now().Add(30 * time.Second)
	for {
		ends, err := e.adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil && len(ends[topic]) == want {
			return ends, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("list end offsets of %s: %d of %d partitions (err %v)", topic, len(ends[topic]), want, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// projector is a running Postgres projector.
type projector struct {
	cancel context.CancelFunc
	done   chan error
	log    *slog.Logger
}

// startProjector runs the Postgres projector and waits until its group is
// stable with every member assigned.
func (e *env) startProjector(ctx context.Context) (*projector, error) {
	p, err := postgres.New(postgres.Config{Kafka: e.kcfg, DSN: e.dsn, Logger: e.log})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	pr := &projector{cancel: cancel, done: make(chan error, 1), log: e.log}
	go func() { pr.done <- p.Run(pctx) }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		gs, err := e.adm.DescribeGroups(ctx, postgres.DefaultGroup)
		if err == nil {
			if g, ok := gs[postgres.DefaultGroup]; ok && g.State == "Stable" && len(g.Members) > 0 {
				return pr, nil
			}
		}
		select {
		case err := <-pr.done:
			cancel()
			return nil, fmt.Errorf("projector stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	pr.stop()
	return nil, errors.New("projector group not stable after a minute")
}

// stop ends the projector; its database sessions end with it, which
// flushes their statistics to pg_stat_user_tables.
func (p *projector) stop() {
	p.cancel()
	// Run returns nil when cancelled: anything else failed first.
	if err := <-p.done; err != nil {
		p.log.Warn("projector", "err", err)
	}
}

// countWrites installs, in the fresh bench database, statement-level
// triggers on every table of the read model that add the number of rows
// each INSERT, UPDATE or DELETE wrote to bench_writes. Row counters of
// pg_stat_user_tables were tried first: a backend publishes them when it
// ends, and they showed up seconds to minutes late (at 50,000 VMs the
// seeding's inserts were still invisible a minute after its sessions had
// ended), so a baseline read from them counted the seeding as the storm's.
// The triggers count in the writing transaction itself. Their cost (one
// count over the statement's transition table and one row insert per
// statement) is paid by the measured projector; it batches by statement.
func (e *env) countWrites(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `
CREATE TABLE bench_writes (tbl text NOT NULL, n bigint NOT NULL);
CREATE FUNCTION bench_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO bench_writes SELECT TG_TABLE_NAME, count(*) FROM oldrows HAVING count(*) > 0;
	ELSE
		INSERT INTO bench_writes SELECT TG_TABLE_NAME, count(*) FROM newrows HAVING count(*) > 0;
	END IF;
	RETURN NULL;
END $$;
DO $$
DECLARE t text;
BEGIN
	FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'bench_writes' LOOP
		EXECUTE format('CREATE TRIGGER bench_ins AFTER INSERT ON %I REFERENCING NEW TABLE AS newrows FOR EACH STATEMENT EXECUTE FUNCTION bench_count()', t);
		EXECUTE format('CREATE TRIGGER bench_upd AFTER UPDATE ON %I REFERENCING NEW TABLE AS newrows FOR EACH STATEMENT EXECUTE FUNCTION bench_count()', t);
		EXECUTE format('CREATE TRIGGER bench_del AFTER DELETE ON %I REFERENCING OLD TABLE AS oldrows FOR EACH STATEMENT EXECUTE FUNCTION bench_count()', t);
	END LOOP;
END $$;`)
	if err != nil {
		return fmt.Errorf("install write counters: %w", err)
	}
	return nil
}

// tableWrites returns the rows written per table since countWrites, as
// committed so far.
func (e *env) tableWrites(ctx context.Context) (map[string]int64, error) {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT tbl, sum(n)::bigint FROM bench_writes GROUP BY tbl`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		out[t] = n
	}
	return out, rows.Err()
}

// rowCount returns the number of rows of a read-model table.
func (e *env) rowCount(ctx context.Context, table string) (int64, error) {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n)
	return n, err
}

func diffWrites(before, after map[string]int64) (total int64, byTable map[string]int64) {
	byTable = map[string]int64{}
	for t, n := range after {
		if d := n - before[t]; d != 0 {
			byTable[t] = d
			total += d
		}
	}
	return total, byTable
}

// ServerVersion returns the Postgres server version at dsn.
func ServerVersion(ctx context.Context, dsn string) string {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return ""
	}
	defer conn.Close(ctx)
	var v string
	_ = conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v
}
