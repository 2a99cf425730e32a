// Package journal is the "journal" scenario of `make bench`: the journal
// projector's ingest of a fleet's history from Kafka into ClickHouse, beside
// clickhouse-client inserting the same rows, and the analyst query of job
// durations by type and day over a 10 M row job_journal.
//
// It owns no table and changes no projector code: it drives
// projectors/journal as `vmplane projector --kind journal` would, on an
// embedded kfake broker and fresh databases of the ClickHouse test server,
// which it drops when done.
package journal
