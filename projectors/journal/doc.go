// Package journal owns vmplane's history in ClickHouse: the job journal
// (job_journal, one row per job event, read back with Reader.JobJournal) and
// the VM event history (vm_events, every record of vm.events.v1, for "what
// was VM X at 10:03"). It creates its tables (Migrate) and projects
// vm.events.v1 into them in batches (Projector).
//
// For benchmarks and load tests it also renders job_journal rows for bulk
// loads (AppendJobJournalTSV); the projector itself never uses it.
//
// It never decides anything and writes Kafka only to dead-letter records it
// cannot decode; the read models behind the API belong to projectors/postgres.
//
// Idempotence comes from the tables, not from the consumer: both are
// ReplacingMergeTree ordered by a key that one Kafka record always maps to,
// so a batch inserted twice (a crash between the insert and the offset
// commit, a partition handed over mid-batch) reads once through FINAL.
//
// The SQL runs on ClickHouse 18.16 (Debian's) and current releases; see
// schema.go and store.go for what that rules out.
package journal
