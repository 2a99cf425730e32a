package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// testDB is a fresh database for one test, dropped when it ends.
func testDB(t *testing.T) string { return testkit.Postgres(t) }

// migratedDB is a fresh database with the read models, and a connection to
// it that the test's end closes.
func migratedDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := testDB(t)
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return dsn, conn
}

// refuseOffsets makes every write of consumer_offsets fail, and with it
// every batch, until the trigger refuse_offsets is dropped.
func refuseOffsets(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	if _, err := admin.Exec(t.Context(), `
		CREATE FUNCTION refuse_offsets() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'offsets refused by the test'; END $$;
		CREATE TRIGGER refuse_offsets BEFORE INSERT OR UPDATE ON consumer_offsets
			FOR EACH ROW EXECUTE FUNCTION refuse_offsets()`); err != nil {
		t.Fatal(err)
	}
}

// testBroker starts kfake with the topic table applied.
func testBroker(t *testing.T) kafka.Config {
	t.Helper()
	cfg, _ := testkit.Kafka(t)
	return cfg
}

// producer writes records and remembers where each landed.
type producer struct {
	t     *testing.T
	cl    *kgo.Client
	codec *schemas.Codec
	last  map[topicPartition]int64
}

func newProducer(t *testing.T, cfg kafka.Config) *producer {
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &producer{t: t, cl: cl, codec: schemas.NewCodec(nil), last: map[topicPartition]int64{}}
}

func (p *producer) send(topic, key string, v any) {
	p.t.Helper()
	kr, err := kafka.ToKafka(p.t.Context(), p.codec, schemas.Record{Topic: topic, Key: key, Value: v})
	if err != nil {
		p.t.Fatal(err)
	}
	p.raw(kr)
}

func (p *producer) raw(kr *kgo.Record) {
	p.t.Helper()
	if err := p.cl.ProduceSync(p.t.Context(), kr).FirstErr(); err != nil {
		p.t.Fatal(err)
	}
	p.last[topicPartition{kr.Topic, kr.Partition}] = kr.Offset
}

// waitApplied waits until group's stored offsets cover every record sent.
func waitApplied(t *testing.T, dsn, group string, p *producer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		stored, err := storedOffsetsOf(t, dsn, group)
		if err == nil {
			done := true
			for tp, off := range p.last {
				if stored[tp] <= off {
					done = false
				}
			}
			if done {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("projector did not catch up: stored %v, sent %v (err %v)", stored, p.last, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func storedOffsetsOf(t *testing.T, dsn, group string) (map[topicPartition]int64, error) {
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(t.Context())
	return readOffsets(t.Context(), conn, group)
}

// startProjector runs a projector until the test ends or cancel is called;
// wait blocks until Run returned.
func startProjector(t *testing.T, cfg Config, hook func(p *Projector, cancel func())) (cancel func(), wait func()) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	if hook != nil {
		hook(p, cancel)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var runErr error
	waited := false
	wait = func() {
		if !waited {
			runErr, waited = <-done, true
		}
		if runErr != nil {
			t.Errorf("Run: %v", runErr)
		}
	}
	t.Cleanup(func() { cancel(); wait() })
	return cancel, wait
}

// dump returns every projected row of dsn as text, table by table, for
// comparing two databases.
func dump(t *testing.T, dsn string) map[string][]string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	out := map[string][]string{}
	for _, table := range []string{"vms", "jobs", "job_steps", "hosts", "allocations", "offerings", "accounts", "api_keys", "alerts", "alert_acks", "settings",
		"templates", "storage_pools", "networks", "volumes", "nics", "volume_snapshots"} {
		rows, err := conn.Query(t.Context(), fmt.Sprintf("SELECT t::text FROM %s t ORDER BY 1", table))
		if err != nil {
			t.Fatal(err)
		}
		out[table], err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
