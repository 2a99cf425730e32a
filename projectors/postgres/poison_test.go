package postgres

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestProjectorDeadLettersWhatTheDatabaseRefuses: records the database
// refuses for their data (here a trigger raising SQLSTATE 22021, what a
// NUL in a text column raises), two of them on two partitions of one
// poll, go to dlq.v1 with the reason, and every other record of the
// batch, before and after them, is applied in that same poll. A rebuild
// then skips them as the live projector did.
func TestProjectorDeadLettersWhatTheDatabaseRefuses(t *testing.T) {
	kcfg := testBroker(t)
	p := newProducer(t, kcfg)
	dsn, admin := migratedDB(t)
	if _, err := admin.Exec(t.Context(), `
		CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN IF NEW.name LIKE 'poison%' THEN
				RAISE EXCEPTION 'invalid byte sequence (test)' USING ERRCODE = '22021';
			END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON vms
			FOR EACH ROW EXECUTE FUNCTION refuse_poison()`); err != nil {
		t.Fatal(err)
	}
	const at = int64(1_700_000_000_000)
	names := []string{"a", "b", "poison-1", "c", "d", "e", "poison-2", "f"}
	partitions := map[int32]bool{}
	for i, name := range names {
		id := fmt.Sprintf("vm-%d", i+1)
		kr, err := kafka.ToKafka(t.Context(), p.codec, schemas.Record{Topic: schemas.TopicVmEvents, Key: id,
			Value: &schemas.VmStateChanged{VmID: id, Name: name, Account: "acme", ZoneID: "z1",
				VmState: "Running", PowerState: "PowerOn", CreatedAt: at, UpdatedAt: at}})
		if err != nil {
			t.Fatal(err)
		}
		p.raw(kr)
		if strings.HasPrefix(name, "poison") {
			partitions[kr.Partition] = true
		}
	}
	if len(partitions) != 2 {
		t.Fatalf("the poison records share a partition (%v): pick other ids", partitions)
	}
	var proj *Projector
	committed := make(chan int, len(names))
	startProjector(t, Config{Kafka: kcfg, DSN: dsn, Group: DefaultGroup}, func(pp *Projector, _ func()) {
		proj = pp
		pp.afterCommit = func(n int) { committed <- n }
		// One fetch may bring some partitions and the next the rest: the
		// first poll waits until every record is buffered, once.
		var once sync.Once
		pp.beforePoll = func(cl *kgo.Client) {
			once.Do(func() {
				// A partition that joins the fetch session late waits out
				// a long-poll of the others (5 s); under make test's load
				// two such rounds took more than 10 s.
				deadline := time.Now().Add(30 * time.Second)
				for cl.BufferedFetchRecords() < int64(len(names)) && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	})
	waitApplied(t, dsn, DefaultGroup, p)
	var polls []int
	for len(polls) == 0 || len(committed) > 0 {
		select {
		case n := <-committed:
			polls = append(polls, n)
		case <-time.After(5 * time.Second):
			t.Fatal("no poll committed")
		}
	}
	if len(polls) != 1 || polls[0] != len(names) {
		t.Fatalf("records per committed poll %v: want all %d in one, so that the bisection is what the test sees", polls, len(names))
	}
	want := "a,b,c,d,e,f"
	if got := vmNames(t, dsn); got != want {
		t.Fatalf("vms = %s, want %s", got, want)
	}
	dead := readDLQ(t, kcfg, 2)
	for _, h := range dead {
		if h["dlq.consumer"] != DefaultGroup || !strings.Contains(h["dlq.error"], "22021") || h["dlq.topic"] != schemas.TopicVmEvents {
			t.Errorf("dead letter headers %v", h)
		}
	}
	if err := proj.Health(); err != nil {
		t.Errorf("Health after the dead letters: %v", err)
	}
	// The rebuilt schema has no trigger: only the skip keeps them out.
	if _, err := Rebuild(t.Context(), kcfg, dsn); err != nil {
		t.Fatal(err)
	}
	if got := vmNames(t, dsn); got != want {
		t.Fatalf("vms after a rebuild = %s, want %s", got, want)
	}
}

func vmNames(t *testing.T, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), `SELECT name FROM vms ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, ",")
}

// TestProjectorHealthReportsLongRetries: a transient refusal is retried,
// not dead-lettered, and Health reports it once it lasts past RetryAlarm,
// until it succeeds.
func TestProjectorHealthReportsLongRetries(t *testing.T) {
	kcfg := testBroker(t)
	p := newProducer(t, kcfg)
	dsn, admin := migratedDB(t)
	refuseOffsets(t, admin)
	p.send(schemas.TopicAccounts, "acme", &schemas.AccountCreated{AccountID: "acme", Name: "Acme", At: 1})
	var proj *Projector
	startProjector(t, Config{Kafka: kcfg, DSN: dsn, Group: "slow", RetryAlarm: 300 * time.Millisecond},
		func(pp *Projector, _ func()) { proj = pp })
	deadline := time.Now().Add(10 * time.Second)
	for proj.Health() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Health stayed nil while every write failed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := proj.Health(); !strings.Contains(err.Error(), "apply batch: retrying for") || !strings.Contains(err.Error(), "offsets refused by the test") {
		t.Errorf("Health = %v", err)
	}
	if _, err := admin.Exec(t.Context(), `DROP TRIGGER refuse_offsets ON consumer_offsets`); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, dsn, "slow", p)
	if err := proj.Health(); err != nil {
		t.Errorf("Health after the retry succeeded: %v", err)
	}
}
