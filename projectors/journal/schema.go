package journal

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The tables keep to what ClickHouse 18.16 understands: no DateTime64,
// LowCardinality, Map, JSON, TTL or CODEC. Times are a DateTime (seconds, for
// partitioning and range queries) plus at_ms (Int64 Unix milliseconds) so
// the order of events within a second is not lost.
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
	"offset" Int64
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
	"offset" Int64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (vm_id, ts, "partition", "offset")`,
}

// Migrate creates the database and the journal's tables unless they exist.
// It takes the database by name because a connection cannot be opened on a
// database that does not exist yet.
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
	return nil
}

// quoteIdent quotes an identifier the way every ClickHouse version reads it.
func quoteIdent(name string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(name) + "`"
}
