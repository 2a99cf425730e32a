package journal

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The tables keep to what ClickHouse 18.16 understands: no DateTime64,
// LowCardinality, Map, JSON, TTL or CODEC, and no ADD COLUMN IF NOT EXISTS
// (columns are added after a look at system.columns). Times are a DateTime
// (seconds, for partitioning and range queries) plus at_ms (Int64 Unix
// milliseconds) so the order of events within a second is not lost.
//
// type, text, partition and offset are words some releases read as keywords
// in some places, so the SQL here always quotes them ("..." works on every
// release); analysts' queries on 18.16 may leave them bare.
//
// ReplacingMergeTree deduplicates only rows of one partition, so the
// partition key (toYYYYMM(ts)) must be a function of the row's own event
// time, which a redelivered record repeats exactly.
var tables = []string{
	// One row per job event. Steps use their seq (1..n); the accepted row uses
	// 0 and the end rows (succeeded, failed, cancelled, rejected) use endSeq,
	// so ORDER BY seq reads a job in order. kind is in the key as well so that
	// an end row can never replace a step, whatever seq a writer chooses.
	`CREATE TABLE IF NOT EXISTS %s.job_journal (
	job_id String,
	seq UInt32,
	kind String,
	vm_id String,
	account String,
	job_type String,
	origin String,
	step String,
	task_state String,
	"text" String,
	obj String,
	reason String,
	detail String,
	vm_state String,
	ts DateTime,
	at_ms Int64,
	topic String,
	"partition" Int32,
	"offset" Int64,
	host_id String,
	started_ms Int64,
	error_code String,
	caller_account String,
	caller_key_id String,
	caller_request_id String
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (job_id, seq, kind)`,
	// One row per record of vm.events.v1. (partition, offset) names the
	// record; partition is in the key because events without a VM (an alert
	// about a host) share the empty vm_id across partitions.
	`CREATE TABLE IF NOT EXISTS %s.vm_events (
	vm_id String,
	"type" String,
	ts DateTime,
	at_ms Int64,
	job_id String,
	payload String,
	vm_state String,
	task_state String,
	power_state String,
	host_id String,
	topic String,
	"partition" Int32,
	"offset" Int64,
	reason String
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (vm_id, ts, "partition", "offset")`,
	// One row per record of host.status.v1: every status a host went
	// through. The topic is compacted, so what a projector reads long after
	// the fact holds only each host's latest status; the live projection
	// keeps the whole history.
	`CREATE TABLE IF NOT EXISTS %s.host_events (
	host_id String,
	name String,
	zone_id String,
	cluster_id String,
	status String,
	resource_state String,
	reservable UInt8,
	reason String,
	payload String,
	ts DateTime,
	at_ms Int64,
	topic String,
	"partition" Int32,
	"offset" Int64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, ts, "partition", "offset")`,
	// One row per record of lease.events.v1 (key zone_id).
	`CREATE TABLE IF NOT EXISTS %s.lease_events (
	lease_id String,
	zone_id String,
	project String,
	name String,
	status String,
	degraded UInt8,
	event String,
	detail String,
	payload String,
	ts DateTime,
	at_ms Int64,
	topic String,
	"partition" Int32,
	"offset" Int64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (lease_id, ts, "partition", "offset")`,
}

// column is a column added after its table was first released; Migrate adds
// it to tables created before.
type column struct{ table, name, typ string }

var addedColumns = []column{
	{"job_journal", "host_id", "String"},
	{"vm_events", "reason", "String"},
	{"job_journal", "started_ms", "Int64"},
	// Who asked (accepted and rejected rows) and the end's error code
	// (issue 29).
	{"job_journal", "error_code", "String"},
	{"job_journal", "caller_account", "String"},
	{"job_journal", "caller_key_id", "String"},
	{"job_journal", "caller_request_id", "String"},
}

// The aggregates are fed by materialized views on job_journal. Every state
// is of a function that a row seen twice does not change (any, min, max,
// argMax, uniqExact), because a retried batch inserts its rows again and a
// view sees every insert, FINAL or not. job_ends is a narrow copy of the end
// rows instead, whose copies collapse as job_journal's do.
var aggregates = []aggregate{
	{
		// job_ends: one row per ended job, keyed by outcome first, with its
		// running time: durations by type and day read a quarter of the
		// journal's rows and three of its columns (docs/analytics.md
		// query 2). End rows from before started_ms are left out.
		table: `CREATE TABLE IF NOT EXISTS %[1]s.job_ends (
	day Date,
	job_type String,
	outcome String,
	job_id String,
	vm_id String,
	account String,
	reason String,
	started_ms Int64,
	ended_ms Int64,
	duration_ms Int64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (outcome, day, job_type, job_id)`,
		name: "job_ends_mv",
		view: `CREATE MATERIALIZED VIEW IF NOT EXISTS %[1]s.job_ends_mv TO %[1]s.job_ends AS
SELECT toDate(ts) AS day, job_type, kind AS outcome, job_id, vm_id, account, reason, started_ms,
	at_ms AS ended_ms, at_ms - started_ms AS duration_ms
FROM %[1]s.job_journal
WHERE seq = 1000000 AND started_ms > 0`,
		backfill: `INSERT INTO %[1]s.job_ends (day, job_type, outcome, job_id, vm_id, account, reason, started_ms, ended_ms, duration_ms)
SELECT toDate(ts), job_type, kind, job_id, vm_id, account, reason, started_ms, at_ms, at_ms - started_ms
FROM %[1]s.job_journal
WHERE seq = 1000000 AND started_ms > 0`,
	},
	{
		// job_runs: one row per job once merged: its type, VM, account, the
		// host of its latest step that named one, when it was accepted and
		// ended, and how it ended (the kind of its highest seq).
		table: `CREATE TABLE IF NOT EXISTS %[1]s.job_runs (
	job_id String,
	job_type AggregateFunction(any, String),
	vm_id AggregateFunction(any, String),
	account AggregateFunction(any, String),
	host_id AggregateFunction(argMaxIf, String, UInt32, UInt8),
	started_ms AggregateFunction(min, Int64),
	ended_ms AggregateFunction(max, Int64),
	outcome AggregateFunction(argMax, String, UInt32),
	reason AggregateFunction(argMax, String, UInt32)
) ENGINE = AggregatingMergeTree()
ORDER BY job_id`,
		name: "job_runs_mv",
		view: `CREATE MATERIALIZED VIEW IF NOT EXISTS %[1]s.job_runs_mv TO %[1]s.job_runs AS
SELECT job_id,
	anyState(job_type) AS job_type,
	anyState(vm_id) AS vm_id,
	anyState(account) AS account,
	argMaxIfState(host_id, seq, host_id != '') AS host_id,
	minState(at_ms) AS started_ms,
	maxState(at_ms) AS ended_ms,
	argMaxState(kind, seq) AS outcome,
	argMaxState(reason, seq) AS reason
FROM %[1]s.job_journal
GROUP BY job_id`,
		backfill: `INSERT INTO %[1]s.job_runs (job_id, job_type, vm_id, account, host_id, started_ms, ended_ms, outcome, reason)
SELECT job_id, anyState(job_type), anyState(vm_id), anyState(account), argMaxIfState(host_id, seq, host_id != ''),
	minState(at_ms), maxState(at_ms), argMaxState(kind, seq), argMaxState(reason, seq)
FROM %[1]s.job_journal
GROUP BY job_id`,
	},
	{
		// job_daily: jobs ended per day, job type and outcome (uniqExact of
		// job ids, so a replayed end row counts once).
		table: `CREATE TABLE IF NOT EXISTS %[1]s.job_daily (
	day Date,
	job_type String,
	outcome String,
	reason String,
	jobs AggregateFunction(uniqExact, String)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (day, job_type, outcome, reason)`,
		name: "job_daily_mv",
		view: `CREATE MATERIALIZED VIEW IF NOT EXISTS %[1]s.job_daily_mv TO %[1]s.job_daily AS
SELECT toDate(ts) AS day, job_type, kind AS outcome, reason, uniqExactState(job_id) AS jobs
FROM %[1]s.job_journal
WHERE seq = 1000000
GROUP BY day, job_type, outcome, reason`,
		backfill: `INSERT INTO %[1]s.job_daily (day, job_type, outcome, reason, jobs)
SELECT toDate(ts) AS day, job_type, kind AS outcome, reason, uniqExactState(job_id)
FROM %[1]s.job_journal
WHERE seq = 1000000
GROUP BY day, job_type, outcome, reason`,
	},
}

// views are plain views over the aggregates, the shapes analysts query.
var views = []string{
	// jobs: one row per job with its duration, read from job_runs.
	`CREATE VIEW IF NOT EXISTS %[1]s.jobs AS
SELECT job_id, job_type, vm_id, account, host_id, outcome, reason, started_ms, ended_ms,
	ended_ms - started_ms AS duration_ms,
	toDate(toDateTime(intDiv(started_ms, 1000))) AS day
FROM (
	SELECT job_id,
		anyMerge(job_type) AS job_type,
		anyMerge(vm_id) AS vm_id,
		anyMerge(account) AS account,
		argMaxIfMerge(host_id) AS host_id,
		argMaxMerge(outcome) AS outcome,
		argMaxMerge(reason) AS reason,
		minMerge(started_ms) AS started_ms,
		maxMerge(ended_ms) AS ended_ms
	FROM %[1]s.job_runs
	GROUP BY job_id
)`,
	// job_stats: counts and durations of ended jobs per day, job type and
	// host.
	`CREATE VIEW IF NOT EXISTS %[1]s.job_stats AS
SELECT day, job_type, host_id, outcome,
	count() AS jobs,
	avg(duration_ms) AS avg_ms,
	quantile(0.95)(duration_ms) AS p95_ms,
	max(duration_ms) AS max_ms
FROM %[1]s.jobs
WHERE outcome IN ('succeeded', 'failed', 'cancelled', 'rejected')
GROUP BY day, job_type, host_id, outcome`,
}

type aggregate struct {
	table, name, view, backfill string
}

// Migrate creates the database and the journal's tables and views unless
// they exist, and brings tables made by an older release up to date. It
// takes the database by name because a connection cannot be opened on a
// database that does not exist yet. Every step is safe to run again.
func Migrate(ctx context.Context, conn driver.Conn, database string) error {
	db := quoteIdent(database)
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db); err != nil {
		return fmt.Errorf("create database %s: %w", database, err)
	}
	for _, t := range tables {
		if err := conn.Exec(ctx, fmt.Sprintf(t, db)); err != nil {
			return fmt.Errorf("migrate %s: %w", database, err)
		}
	}
	for _, c := range addedColumns {
		var n uint64
		if err := conn.QueryRow(ctx, `SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?`,
			database, c.table, c.name).Scan(&n); err != nil {
			return fmt.Errorf("migrate %s: look up %s.%s: %w", database, c.table, c.name, err)
		}
		if n > 0 {
			continue
		}
		if err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s.%s ADD COLUMN %s %s", db, c.table, c.name, c.typ)); err != nil {
			return fmt.Errorf("migrate %s: add %s.%s: %w", database, c.table, c.name, err)
		}
	}
	for _, a := range aggregates {
		var n uint64
		if err := conn.QueryRow(ctx, `SELECT count() FROM system.tables WHERE database = ? AND name = ?`,
			database, a.name).Scan(&n); err != nil {
			return fmt.Errorf("migrate %s: look up %s: %w", database, a.name, err)
		}
		for _, q := range []string{a.table, a.view} {
			if err := conn.Exec(ctx, fmt.Sprintf(q, db)); err != nil {
				return fmt.Errorf("migrate %s: %w", database, err)
			}
		}
		// A view sees only inserts made after it exists: a new one is
		// filled from the rows already there. Its states absorb rows that
		// reach it both ways.
		if n == 0 {
			if err := conn.Exec(ctx, fmt.Sprintf(a.backfill, db)); err != nil {
				return fmt.Errorf("migrate %s: fill %s: %w", database, a.name, err)
			}
		}
	}
	for _, v := range views {
		if err := conn.Exec(ctx, fmt.Sprintf(v, db)); err != nil {
			return fmt.Errorf("migrate %s: %w", database, err)
		}
	}
	return nil
}

// quoteIdent quotes an identifier the way every ClickHouse version reads it.
func quoteIdent(name string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(name) + "`"
}
