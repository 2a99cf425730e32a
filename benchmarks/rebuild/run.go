package rebuild

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/memory"
	"github.com/vmplane/vmplane/internal/pgserver"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// sample is one repetition's measurements.
type sample struct {
	Rebuild time.Duration // Rebuild's call, start to end
	Stats   postgres.RebuildStats
	Copy    time.Duration // COPY of the rebuilt rows into empty tables
	Rows    map[string]int64
}

// runOnce rebuilds a fresh, migrated (empty) database from the log, then
// copies the rows the rebuild left behind into the empty tables of a
// second fresh database and times that. Both databases are dropped.
func runOnce(ctx context.Context, l *eventLog, pgBase string, log *slog.Logger) (sample, error) {
	var s sample
	rebuilt, dropRebuilt, err := freshDB(ctx, pgBase, log)
	if err != nil {
		return s, err
	}
	defer dropRebuilt()
	if err := postgres.Migrate(ctx, rebuilt); err != nil {
		return s, err
	}
	// The collector as `vmplane projector rebuild` sets it by default
	// (--gc-percent); the embedded broker in this process gets it too.
	gc := debug.SetGCPercent(memory.RecommendedGCPercent)
	stopProfile, err := harness.CPUProfile(os.Getenv("VMPLANE_BENCH_CPUPROFILE"), log)
	if err != nil {
		return s, err
	}
	start := time.Now()
	s.Stats, err = postgres.Rebuild(ctx, l.kcfg, rebuilt)
	s.Rebuild = time.Since(start)
	stopProfile()
	debug.SetGCPercent(gc)
	if err != nil {
		return s, err
	}
	if s.Stats.Records != int64(l.events) {
		return s, fmt.Errorf("rebuild replayed %d records of %d", s.Stats.Records, l.events)
	}

	tables, err := dumpTables(ctx, rebuilt)
	if err != nil {
		return s, fmt.Errorf("dump the rebuilt tables: %w", err)
	}
	target, dropTarget, err := freshDB(ctx, pgBase, log)
	if err != nil {
		return s, err
	}
	defer dropTarget()
	if err := postgres.Migrate(ctx, target); err != nil {
		return s, err
	}
	s.Copy, s.Rows, err = copyTables(ctx, target, tables)
	return s, err
}

// freshDB creates an empty database on the server and returns its DSN and
// a function dropping it.
func freshDB(ctx context.Context, pgBase string, log *slog.Logger) (string, func(), error) {
	dsn, name, err := pgserver.FreshDatabase(ctx, pgBase, "bench_rebuild_")
	if err != nil {
		return "", nil, err
	}
	return dsn, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pgserver.DropDatabase(dctx, pgBase, name); err != nil {
			log.Warn("drop bench database", "db", name, "err", err)
		}
	}, nil
}

// table is one table's rows in COPY's binary format.
type table struct {
	name string
	data []byte
}

// dumpTables reads every read-model table of dsn's current schema
// (schema_migrations aside) with COPY TO, in binary format.
func dumpTables(ctx context.Context, dsn string) ([]table, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
		AND tablename <> 'schema_migrations' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []table
	for _, n := range names {
		var b bytes.Buffer
		if _, err := conn.PgConn().CopyTo(ctx, &b, "COPY "+pgx.Identifier{n}.Sanitize()+" TO STDOUT (FORMAT binary)"); err != nil {
			return nil, fmt.Errorf("copy %s out: %w", n, err)
		}
		out = append(out, table{n, b.Bytes()})
	}
	return out, nil
}

// copyTables loads the tables into dsn's empty tables with COPY FROM STDIN
// (binary), all in one transaction as Rebuild loads, and returns the wall
// clock from BEGIN to COMMIT and the rows per table.
func copyTables(ctx context.Context, dsn string, tables []table) (time.Duration, map[string]int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows := map[string]int64{}
	start := time.Now()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, t := range tables {
			tag, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(t.data), "COPY "+pgx.Identifier{t.name}.Sanitize()+" FROM STDIN (FORMAT binary)")
			if err != nil {
				return fmt.Errorf("copy %s in: %w", t.name, err)
			}
			if n := tag.RowsAffected(); n > 0 {
				rows[t.name] = n
			}
		}
		return nil
	})
	return time.Since(start), rows, err
}
