// Package gateway owns vmplane's REST API (docs/design.md §10): routes under /v1,
// API-key authentication and account scoping, request validation, the
// idempotency of retried requests, and the translation of a request into a
// command record on Kafka (vm.commands.v1, keyed by vm_id; a storage pool's
// or guest network's desired state on placement.requests.v1, keyed by zone).
//
// It reads only the Postgres read model, through the small interfaces it
// declares (ReadModel and its kin in reads.go; readmodel.Reader in a
// running gateway), and writes only command records through a Publisher and
// its own records beside the read model: Idempotency-Keys, and the ids it
// hands out in a 202, which every lookup by id falls back to until the
// projector has them (accepted.go), so that a client can act at once on the
// id it was given. It never decides whether a command succeeds: its
// pre-check of allowed_actions against the read model only answers the
// common case at once; the VM processor remains the judge and rejects with
// JobRejected what the read model did not yet know. It never imports a
// processor, nor the projector that writes the read model.
package gateway
