// Package postgres owns vmplane's Postgres read models: the embedded schema
// migrations, the projector that folds vm.events.v1, vm.commands.v1,
// host.status.v1, placement.events.v1, lease.events.v1, catalog.v1 and accounts.v1 into
// tables, the Reader the gateway queries, and the JobWatch that tells the
// gateway when a commit ended a job (Postgres notifications sent by the
// projector's transactions).
//
// Rows are applied exactly once: each poll's rows and the next consumer
// offsets are written in one Postgres transaction, and the offsets that count
// are the ones in consumer_offsets, never Kafka's group commits. The package
// never decides anything and never writes to Kafka except dead letters: it
// is a projection that can be dropped and rebuilt from the log.
package postgres
