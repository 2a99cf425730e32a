package sim

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// TestProjectionMatchesPostgres holds the pure fold the simulation checks
// (postgres.Model) against the real thing: a seed's log, produced to the
// embedded broker, is projected by the real projector into a real
// Postgres, and then rebuilt by postgres.Rebuild; both databases must hold
// what postgres.Rebuilt folds from the same log.
func TestProjectionMatchesPostgres(t *testing.T) {
	for _, seed := range []uint64{3, 11} {
		w, err := played(Options{Seed: seed, Family: rotation(seed)})
		if err != nil || w.err != nil {
			t.Fatalf("seed %d: %v %v", seed, err, w.err)
		}
		kcfg, _ := testkit.Kafka(t)
		dsn := testkit.Postgres(t)
		if err := postgres.Migrate(t.Context(), dsn); err != nil {
			t.Fatal(err)
		}
		log, n := produceLog(t, kcfg, w)
		want := postgres.Rebuilt(log)
		t.Logf("seed %d: %d records; rows %v", seed, n, want.Rows())

		p, err := postgres.New(postgres.Config{Kafka: kcfg, DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		waitProjected(t, conn, n)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("projector: %v", err)
		}
		p.Close()
		got, err := postgres.ReadModel(t.Context(), conn)
		if err != nil {
			t.Fatal(err)
		}
		if d := got.Diff(want); d != "" {
			t.Errorf("seed %d: the projector's tables differ from the fold: %s", seed, d)
		}
		if _, err := postgres.Rebuild(t.Context(), kcfg, dsn); err != nil {
			t.Fatal(err)
		}
		// The rebuild swapped schemas; a new session sees the new tables.
		conn.Close(context.Background())
		if conn, err = pgx.Connect(t.Context(), dsn); err != nil {
			t.Fatal(err)
		}
		rebuilt, err := postgres.ReadModel(t.Context(), conn)
		conn.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if d := rebuilt.Diff(want); d != "" {
			t.Errorf("seed %d: the rebuilt tables differ from the fold: %s", seed, d)
		}
	}
}

// produceLog writes the world's records of the projector's topics to the
// broker, each on its partition and with its timestamp, and returns them
// decoded as the broker numbers them.
func produceLog(t *testing.T, kcfg kafka.Config, w *world) ([]schemas.Record, int64) {
	t.Helper()
	cl, err := kgo.NewClient(kcfg.Opts(kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	codec := schemas.NewCodec(nil)
	var log []schemas.Record
	var krs []*kgo.Record
	for _, at := range w.proj.order {
		for o := range w.log.end(at) {
			e, _ := w.log.read(at, o)
			if e.value == nil {
				continue
			}
			v, err := schemas.Unmarshal(e.value)
			if err != nil {
				t.Fatal(err)
			}
			r := schemas.Record{Topic: at.topic, Key: e.key, Value: v, Partition: at.part, Offset: o, TimestampMs: e.at}
			kr, err := kafka.ToKafka(t.Context(), codec, r)
			if err != nil {
				t.Fatal(err)
			}
			kr.Partition, kr.Timestamp = at.part, time.UnixMilli(e.at)
			krs = append(krs, kr)
			log = append(log, r)
		}
	}
	if err := cl.ProduceSync(t.Context(), krs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return log, int64(len(krs))
}

// waitProjected waits until the projector's stored offsets cover n
// records.
func waitProjected(t *testing.T, conn *pgx.Conn, n int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var done int64
		if err := conn.QueryRow(t.Context(), `SELECT coalesce(sum(next_offset), 0) FROM consumer_offsets WHERE "group" = $1`,
			postgres.DefaultGroup).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the projector applied %d of %d records in 2 min", done, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
