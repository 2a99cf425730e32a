// Package readmodel owns the reads of vmplane's Postgres read models: the
// queries of VMs, jobs and their steps, hosts, offerings and alerts,
// templates, storage pools, guest networks and the volumes and NICs of
// VMs, the
// placement views (zone capacity, a host's reservation and allocations),
// accounts and API keys, leases and their notifications; the
// Idempotency-Key store the gateways share; the store of the ids they hand
// out before the projector has them (Accepted); and the JobWatch that
// hears the projector's commits of jobs. The rows it returns (VM, Job,
// Host, …) are declared here; the interfaces a reader needs are its own to
// declare (the gateway's are in package gateway).
//
// It never writes a projected table: projectors/postgres owns them, with
// the migrations that make the schema and the notifications its commits
// send; this package imports nothing of it, and meets it only in the
// database. The two tables it writes are the gateways' own:
// idempotency_keys, which no projector touches, and accepted_resources,
// whose rows the projector deletes as it writes the rows that supersede
// them. It does not migrate: the roles run projectors/postgres.Migrate
// before they open a Reader.
package readmodel
