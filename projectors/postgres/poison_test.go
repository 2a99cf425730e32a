package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// TestProjectorDeadLettersWhatTheDatabaseRefuses: a record the database
// refuses for its data (here a trigger raising SQLSTATE 22021, what a NUL
// in a text column raises) goes to dlq.v1 with the reason, and every other
// record of its batch, before and after it, is applied.
func TestProjectorDeadLettersWhatTheDatabaseRefuses(t *testing.T) {
	kcfg := testBroker(t)
	p := newProducer(t, kcfg)
	dsn, admin := migratedDB(t)
	if _, err := admin.Exec(t.Context(), `
		CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN IF NEW.name = 'poison' THEN
				RAISE EXCEPTION 'invalid byte sequence (test)' USING ERRCODE = '22021';
			END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON vms
			FOR EACH ROW EXECUTE FUNCTION refuse_poison()`); err != nil {
		t.Fatal(err)
	}
	const at = int64(1_700_000_000_000)
	vm := func(id, name string) *schemas.VmStateChanged {
		return &schemas.VmStateChanged{VmID: id, Name: name, Account: "acme", ZoneID: "z1",
			VmState: "Running", PowerState: "PowerOn", CreatedAt: at, UpdatedAt: at}
	}
	for i, name := range []string{"a", "b", "poison", "c", "d"} {
		id := "vm-" + string(rune('1'+i))
		p.send(schemas.TopicVmEvents, id, vm(id, name))
	}
	var proj *Projector
	startProjector(t, Config{Kafka: kcfg, DSN: dsn, Group: "poison"}, func(pp *Projector, _ func()) { proj = pp })
	waitApplied(t, dsn, "poison", p)

	var names []string
	rows, err := admin.Query(t.Context(), `SELECT name FROM vms ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if got := strings.Join(names, ","); got != "a,b,c,d" {
		t.Fatalf("vms = %s, want a,b,c,d", got)
	}
	dead := readDLQ(t, kcfg, 1)
	if h := dead[0]; h["dlq.consumer"] != "poison" || !strings.Contains(h["dlq.error"], "22021") || h["dlq.topic"] != schemas.TopicVmEvents {
		t.Errorf("dead letter headers %v", h)
	}
	if err := proj.Health(); err != nil {
		t.Errorf("Health after the dead letter: %v", err)
	}
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
