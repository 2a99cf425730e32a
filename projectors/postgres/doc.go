// Package postgres owns vmplane's Postgres read models on the write side:
// the embedded schema migrations (every table of the database, the
// gateway's idempotency_keys too), the projector that folds vm.events.v1,
// vm.commands.v1, host.status.v1, placement.events.v1, lease.events.v1,
// catalog.v1 and accounts.v1 into tables, the notifications its
// transactions send when they end or step a job, and the rebuild. What the
// gateway reads of these tables is package readmodel's: this package
// declares no query for a reader and imports nothing of readmodel.
//
// Rows are applied exactly once: each poll's rows and the next consumer
// offsets are written in one Postgres transaction (a poll holding a record
// the database refuses is split until that record is alone and
// dead-lettered; each part commits its rows with its offsets), and the
// offsets that count
// are the ones in consumer_offsets, never Kafka's group commits. The package
// never decides anything and never writes to Kafka except dead letters: it
// is a projection that can be dropped and rebuilt from the log.
package postgres
