package postgres

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// A poll whose offsets the projector knows commits in one round trip
// (vmplane_advance_offsets moves them only from what it expects); when
// another writer has
// moved them (a second instance during a rebalance), the check fails, the
// transaction rolls back, and the projector reads the offsets and applies
// only what lies past them: nothing twice, nothing lost.
func TestTransactionOverKnownAndMovedOffsets(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	dsn, db := migratedDB(t)
	var logs bytes.Buffer
	p, err := New(Config{DSN: dsn, Group: "g", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	tp := topicPartition{schemas.TopicVmEvents, 0}
	batch := func(from, to int64) []decoded {
		var out []decoded
		for off := from; off <= to; off++ {
			out = append(out, decoded{
				kr: &kgo.Record{Topic: tp.topic, Partition: tp.partition, Offset: off},
				rec: schemas.Record{Topic: tp.topic, Key: "vm-1", Partition: tp.partition, Offset: off, Value: &schemas.JobAccepted{
					JobRef: schemas.JobRef{JobID: fmt.Sprintf("job-%d", off), VmID: "vm-1", Account: "acme", JobType: "Reboot", Origin: "api", At: 1000 + off}}},
				ok: true,
			})
		}
		return out
	}
	jobs := func() []string {
		rows, err := db.Query(t.Context(), "SELECT id FROM jobs ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	write := func(what string, b []decoded, known map[topicPartition]int64, wantNext int64) {
		t.Helper()
		next, err := p.write(t.Context(), b, known)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		stored, err := storedOffsetsOf(t, dsn, "g")
		if err != nil {
			t.Fatal(err)
		}
		if next[tp] != wantNext || stored[tp] != wantNext {
			t.Fatalf("%s: next %v, stored %v; want %d", what, next, stored, wantNext)
		}
	}

	fallbacks := func(want int) {
		t.Helper()
		if got := strings.Count(logs.String(), "consumer offsets moved"); got != want {
			t.Fatalf("the check failed %d times, want %d; log:\n%s", got, want, logs.String())
		}
	}
	write("unknown offsets", batch(0, 2), nil, 3)
	write("known offsets", batch(3, 4), map[topicPartition]int64{tp: 3}, 5)
	fallbacks(0)

	// Another instance applies offsets 5 and 6 and stores 7.
	if _, err := db.Exec(t.Context(), `UPDATE consumer_offsets SET next_offset = 7 WHERE "group" = 'g'`); err != nil {
		t.Fatal(err)
	}
	write("moved offsets", batch(5, 8), map[topicPartition]int64{tp: 5}, 9)
	// Only the one-round-trip path can fail its check: it ran.
	fallbacks(1)
	want := []string{"job-0", "job-1", "job-2", "job-3", "job-4", "job-7", "job-8"}
	if got := jobs(); !slices.Equal(got, want) {
		t.Fatalf("jobs %v, want %v (5 and 6 were the other instance's)", got, want)
	}
	// The connection went back to the pool idle: the next poll commits.
	write("after the fallback", batch(9, 9), map[topicPartition]int64{tp: 9}, 10)
	fallbacks(1)

	// A poll of records already applied (below the known offset) writes
	// nothing and leaves the offset where it is.
	write("a replay", batch(7, 9), map[topicPartition]int64{tp: 10}, 10)
	fallbacks(1)
	// An offset row that is not there (the tables swapped by a rebuild) is
	// not what the projector expects either.
	if _, err := db.Exec(t.Context(), `DELETE FROM consumer_offsets WHERE "group" = 'g'`); err != nil {
		t.Fatal(err)
	}
	write("missing offsets", batch(10, 10), map[topicPartition]int64{tp: 10}, 11)
	fallbacks(2)
	want = append(want, "job-9", "job-10")
	slices.Sort(want) // as ORDER BY id: job-10 before job-2
	if got := jobs(); !slices.Equal(got, want) {
		t.Fatalf("jobs %v, want %v", got, want)
	}
}
