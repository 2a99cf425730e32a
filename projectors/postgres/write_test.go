package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// TestJoinsLookUpByKey holds the projector's joins (jobs update, VM power
// update, VM delete) to key lookups once their table is large, although
// their statements were prepared and run while it was small (a new read
// model): a generic plan made then would scan the whole table on every
// batch.
func TestJoinsLookUpByKey(t *testing.T) {
	for _, tc := range []struct {
		name, table string
		bulk        string // fills the table with 20,000 rows bulk-1…bulk-20000 at version 0
		event       func(id string) any
		check       string // a query on row bulk-7 that answers true once the event is applied
	}{
		{"jobs update", "jobs",
			`INSERT INTO jobs (id, state, created_at, updated_at, version)
				SELECT 'bulk-' || g, 'succeeded', now(), now(), 0 FROM generate_series(1, 20000) g`,
			func(id string) any {
				return &schemas.JobAccepted{JobRef: schemas.JobRef{JobID: id, VmID: "vm-" + id, Account: "a", JobType: "Reboot", Origin: "api"}}
			},
			`SELECT state = 'running' FROM jobs WHERE id = 'bulk-7'`},
		{"VM power update", "vms",
			`INSERT INTO vms (id, created_at, updated_at, version)
				SELECT 'bulk-' || g, now(), now(), 0 FROM generate_series(1, 20000) g`,
			func(id string) any {
				return &schemas.PowerStateObserved{VmID: id, HostID: "h1", PowerState: schemas.PowerOff, Count: 2}
			},
			`SELECT power_state = 'PowerOff' FROM vms WHERE id = 'bulk-7'`},
		{"VM delete", "vms",
			`INSERT INTO vms (id, created_at, updated_at, version)
				SELECT 'bulk-' || g, now(), now(), 0 FROM generate_series(1, 20000) g`,
			func(id string) any { return &schemas.VmExpunged{VmID: id} },
			`SELECT count(*) = 0 FROM vms WHERE id = 'bulk-7'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A new read model, and a connection of its own in the pool's statement mode, as the
			// projector's: its prepared statements start with no plan.
			_, conn := migratedDB(t)
			ctx := t.Context()
			offset := int64(0)
			// write projects the event of id in one transaction and returns
			// how many sequential scans of the table that transaction made.
			write := func(id string) int64 {
				t.Helper()
				offset++
				ch := newChanges()
				ch.add(schemas.Record{Topic: schemas.TopicVmEvents, Key: id, Offset: offset,
					TimestampMs: time.Now().UnixMilli(), Value: tc.event(id)})
				b := &pgx.Batch{}
				b.Queue("BEGIN")
				ch.queue(b)
				b.Queue(`SELECT pg_stat_get_xact_numscans($1::regclass)`, tc.table)
				b.Queue("COMMIT")
				br := conn.SendBatch(ctx, b)
				defer br.Close()
				for range b.Len() - 2 {
					if _, err := br.Exec(); err != nil {
						t.Fatal(err)
					}
				}
				var scans int64
				if err := br.QueryRow().Scan(&scans); err != nil {
					t.Fatal(err)
				}
				if _, err := br.Exec(); err != nil {
					t.Fatal(err)
				}
				return scans
			}
			// More runs than Postgres makes custom plans for before it
			// settles on a generic one, on a table of at most a few rows.
			for i := range 10 {
				write(fmt.Sprintf("small-%s-%d", tc.table, i))
			}
			if _, err := conn.Exec(ctx, tc.bulk); err != nil {
				t.Fatal(err)
			}
			if scans := write("bulk-7"); scans != 0 {
				t.Fatalf("one row of 20,000: %d sequential scans of %s, want 0 (a lookup by key)", scans, tc.table)
			}
			var applied bool
			if err := conn.QueryRow(ctx, tc.check).Scan(&applied); err != nil || !applied {
				t.Fatalf("%s: %v, err %v; the event was not applied", tc.check, applied, err)
			}
		})
	}
}
